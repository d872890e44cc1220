package provisioning

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// The API root as the reference spells it, and the lowercase form O2IMS documents, served alike.
const (
	Root         = "/O2ims_infrastructureProvisioning"
	rootLower    = "/o2ims-infrastructureProvisioning"
	apiVersion   = "1.1.0" // O-RAN.WG6.TS.O2IMS-INTERFACE-R004-v10.00 protocol version 1.1
	fieldManager = "o2ims-nbi"
)

// API is the O2ims_infrastructureProvisioning northbound API: reads from the Store, writes to the API
// server.
type API struct {
	store       nbi.Store
	dyn         dynamic.Interface
	resourceIDs func([]string) []string // nil: ids answered as recorded

	mux   *nbi.Mux // set by Register
	cfg   nbi.Config
	log   *zap.Logger
	order byID
}

// New builds the provisioning API over store; dyn sends the writes (nil: they answer 503);
// resourceIDs (may be nil) maps a request's infrastructureResourceIds as the inventory answers them.
func New(store nbi.Store, dyn dynamic.Interface, resourceIDs func([]string) []string) (*API, error) {
	if store == nil {
		return nil, errors.New("nbi: a Store of ProvisioningRequests is required")
	}
	return &API{store: store, dyn: dyn, resourceIDs: resourceIDs, log: zap.NewNop()}, nil
}

// Register adds both API roots. Anything else answers a JSON 404, a wrong method a JSON 405 with Allow
// (the server's); the old route with a trailing space ("provisioningRequests%20") is simply unknown.
func (a *API) Register(m *nbi.Mux) {
	a.mux, a.cfg, a.log = m, m.Config(), m.Log()
	m.AuthorizeAs(Root, rootLower) // one grant covers both spellings
	for _, root := range []string{Root, rootLower} {
		m.Root(root, nil) // the reference's ProblemDetails, as the server writes it
		collection := root + "/v1/provisioningRequests"
		named := collection + "/{provisioningRequestId}"
		m.Handle("GET "+root+"/api_versions", nbi.VerbNone, a.apiVersions)
		m.Handle("GET "+root+"/v1/api_versions", nbi.VerbNone, a.apiVersions)
		m.Handle("GET "+collection, nbi.VerbList, a.list)
		m.Handle("POST "+collection, nbi.VerbCreate, a.create)
		m.Handle("GET "+named, nbi.VerbGet, a.get)
		m.Handle("PUT "+named, nbi.VerbUpdate, a.replace)
		m.Handle("DELETE "+named, nbi.VerbDelete, a.remove)
	}
}

// apiVersions answers the ETSI GS NFV-SOL 013 ApiVersionInformation shape that O2IMS uses:
// uriPrefix is {apiRoot}/{apiName}/{apiMajorVersion} at both the API root and under v1.
func (a *API) apiVersions(w http.ResponseWriter, r *http.Request) error {
	root, _, _ := strings.Cut(r.URL.Path[1:], "/")
	a.mux.Write(w, r, http.StatusOK, nbi.APIVersionInformation{
		URIPrefix:   "/" + root + "/v1",
		APIVersions: []nbi.APIVersionEntry{{Version: apiVersion}},
	})
	return nil
}

// list answers the requests in the Store, filtered, selected and paged (the server's list pipeline).
func (a *API) list(w http.ResponseWriter, r *http.Request) error {
	q, err := nbi.ParseList(r.URL.RawQuery, listRules)
	if err != nil {
		return err
	}
	sorted, err := a.sorted()
	if err != nil {
		return nbi.StoreUnavailable(err)
	}
	if q.Filter == nil && q.Selection.Complete() {
		if media, _ := nbi.Negotiate(r.Header.Get("Accept")); media == query.MediaJSON {
			if body, last, more, ok := a.jsonPage(sorted, q.Marker); ok {
				if more {
					w.Header().Set("Link", q.NextLink(r.URL, last))
				}
				body.writeTo(w, http.StatusOK)
				return nil
			}
		}
	}
	page, more := a.page(sorted, q.Marker, q.Filter, q.Selection)
	if more {
		w.Header().Set("Link", q.NextLink(r.URL, page[len(page)-1].ProvisioningRequestData.ProvisioningRequestID))
	}
	a.mux.Write(w, r, http.StatusOK, ProvisioningRequestList{Items: page})
	return nil
}

// pathID is the id in a named route; one that is not a valid id cannot exist, so it is a 404.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("provisioningRequestId")
	if err := query.ValidateRequestID(id); err != nil {
		return "", nbi.NewProblem(http.StatusNotFound, "provisioning request not found: %v", err)
	}
	return id, nil
}

// get answers one request from the Store: a request being deleted answers DELETING until it is gone.
func (a *API) get(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	obj, found, err := a.store.Get(id)
	if err != nil {
		return nbi.StoreUnavailable(err)
	}
	if !found {
		return nbi.NewProblem(http.StatusNotFound, "provisioning request %q not found", id)
	}
	a.mux.Write(w, r, http.StatusOK, a.infoOf(obj))
	return nil
}

// create makes the ProvisioningRequest named after provisioningRequestId and answers 201 with the Info of
// the object the API server created.
func (a *API) create(w http.ResponseWriter, r *http.Request) error {
	data, err := readData(w, r)
	if err != nil {
		return err
	}
	if err := query.ValidateRequestID(data.ID); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	if err := a.checkChain(data); err != nil {
		return err
	}
	if a.dyn == nil {
		return fromAPIError(errClientNotConfigured, data.ID)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.APIVersion,
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"name": data.ID},
		"spec":       data.Spec(),
	}}
	if ann := requestedBy(r); ann != nil {
		obj.Object["metadata"].(map[string]any)["annotations"] = ann
	}
	ctx, cancel := a.cfg.CallTimeout(r.Context())
	defer cancel()
	created, err := a.dyn.Resource(v1alpha1.GVR).Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return fromAPIError(err, data.ID)
	}
	w.Header().Set("Location", r.URL.Path+"/"+data.ID)
	a.mux.Write(w, r, http.StatusCreated, a.infoOf(created))
	return nil
}

// replace puts the body's data in place of the request's spec. It is one JSON patch replacing /spec
// rather than a read-modify-write: no resourceVersion conflicts with the operator's own frequent status
// writes, no lost update (the whole spec is the body), and one call. The id cannot change (422).
func (a *API) replace(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	data, err := readData(w, r)
	if err != nil {
		return err
	}
	if data.ID != id {
		return nbi.NewProblem(http.StatusUnprocessableEntity,
			"provisioningRequestId %q in the body differs from %q in the path: the id of a provisioning request cannot be changed",
			nbi.Truncate(data.ID, 260), id)
	}
	if err := a.checkChain(data); err != nil {
		return err
	}
	if a.dyn == nil {
		return fromAPIError(errClientNotConfigured, id)
	}
	patch, err := json.Marshal(append([]map[string]any{{"op": "replace", "path": "/spec", "value": data.Spec()}},
		a.annotateOps(r, id)...))
	if err != nil {
		return err
	}
	ctx, cancel := a.cfg.CallTimeout(r.Context())
	defer cancel()
	updated, err := a.dyn.Resource(v1alpha1.GVR).Patch(ctx, id, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return fromAPIError(err, id)
	}
	a.mux.Write(w, r, http.StatusOK, a.infoOf(updated))
	return nil
}

// remove asks the API server to delete the request and answers 202 with its Location to poll: it answers
// DELETING while finalizers hold it, then 404.
func (a *API) remove(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if a.dyn == nil {
		return fromAPIError(errClientNotConfigured, id)
	}
	ctx, cancel := a.cfg.CallTimeout(r.Context())
	defer cancel()
	if err := a.dyn.Resource(v1alpha1.GVR).Delete(ctx, id, metav1.DeleteOptions{}); err != nil {
		return fromAPIError(err, id)
	}
	w.Header().Set("Location", r.URL.Path)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// requestedBy is the annotations of an object the caller writes: who asked (issue 35's audit), nil when
// the NBI authenticates nobody.
func requestedBy(r *http.Request) map[string]any {
	ann := caller.Annotate(r.Context(), nil)
	if ann == nil {
		return nil
	}
	return map[string]any{caller.Annotation: ann[caller.Annotation]}
}

// annotateOps are the JSON-patch operations setting the caller's annotation on request id. Whether the
// annotations map exists is read from the cache: adding the whole map replaces it, so only when the
// cached object has none (another writer adding one in that instant would lose it; none does).
func (a *API) annotateOps(r *http.Request, id string) []map[string]any {
	ann := requestedBy(r)
	if ann == nil {
		return nil
	}
	if obj, ok, err := a.store.Get(id); err == nil && ok && obj.GetAnnotations() != nil {
		key := strings.NewReplacer("~", "~0", "/", "~1").Replace(caller.Annotation)
		return []map[string]any{{"op": "add", "path": "/metadata/annotations/" + key, "value": ann[caller.Annotation]}}
	}
	return []map[string]any{{"op": "add", "path": "/metadata/annotations", "value": ann}}
}
