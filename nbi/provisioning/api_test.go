package provisioning

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

func TestListIsEmptyWithoutRequestsAndSortedWithThem(t *testing.T) {
	e := newEnv(t)
	x := e.Do(http.MethodGet, nbitest.CollectionPath, nil)
	require.Equal(t, http.StatusOK, x.Code())
	require.JSONEq(t, `{"items":[]}`, string(x.Body))
	require.Empty(t, x.Resp.Header.Get("Link"))

	for _, n := range []string{"charlie", "alpha", "bravo"} {
		e.CreateDirect(e.ID(n), nbitest.SimpleSpec("c-"+n))
	}
	e.SetStatus(e.ID("bravo"), map[string]any{"provisioningStatus": map[string]any{
		"provisioningState": "progressing", "provisioningMessage": "rendering",
		"provisioningUpdateTime": "2026-11-30T10:00:00Z",
	}})
	x = e.Eventually(nbitest.CollectionPath, func(x *nbitest.Exchange) bool {
		l := list(t, x)
		return len(l.Items) == 3 && l.Items[1].Status.ProvisioningPhase == PhaseProgressing
	}, "three requests listed")
	l := list(t, x)
	require.Equal(t, []string{e.ID("alpha"), e.ID("bravo"), e.ID("charlie")}, ids(l))
	require.Equal(t, PhasePending, l.Items[0].Status.ProvisioningPhase)
	require.Equal(t, "rendering", l.Items[1].Status.Message)
	require.Equal(t, "2026-11-30T10:00:00Z", l.Items[1].Status.UpdateTime)
}

func ids(l ProvisioningRequestList) []string {
	out := make([]string, len(l.Items))
	for i, it := range l.Items {
		out[i] = it.ProvisioningRequestData.ProvisioningRequestID
	}
	return out
}

func TestGetFulfilledRequestAnswersItsStatusAndResources(t *testing.T) {
	e := newEnv(t)
	id := e.ID("fulfilled")
	created := e.CreateDirect(id, map[string]any{
		"name": "edge one", "description": "the first edge",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{"clusterName": "edge-1", "nodes": []any{int64(1), int64(2)}},
	})
	e.SetStatus(id, map[string]any{
		"provisioningStatus": map[string]any{
			"provisioningState": "fulfilled", "provisioningMessage": "Cluster resource created",
			"provisioningUpdateTime": "2026-11-30T10:11:12Z",
		},
		"provisionedResourceSet": map[string]any{
			"oCloudNodeClusterId":             "0b7a1f6e-cluster-uid",
			"oCloudInfrastructureResourceIds": []any{"host-a", "host-b"},
		},
	})
	x := e.Eventually(nbitest.NamedPath(id), func(x *nbitest.Exchange) bool {
		return x.Code() == http.StatusOK && info(t, x).Status.ProvisioningPhase == PhaseFulfilled
	}, "fulfilled")
	require.Equal(t, ProvisioningRequestInfo{
		ProvisioningRequestData: ProvisioningRequestData{
			ProvisioningRequestID: id, Name: "edge one", Description: "the first edge",
			TemplateName: "nephio-workload-cluster", TemplateVersion: "v3.0.0",
			TemplateParameters: map[string]any{"clusterName": "edge-1", "nodes": []any{float64(1), float64(2)}},
		},
		ProvisioningRequestReference: string(created.GetUID()),
		Status:                       ProvisioningStatus{UpdateTime: "2026-11-30T10:11:12Z", Message: "Cluster resource created", ProvisioningPhase: PhaseFulfilled},
		ProvisionedResourceSet:       ProvisionedResourceSet{NodeClusterID: "0b7a1f6e-cluster-uid", InfrastructureResourceIDs: []string{"host-a", "host-b"}},
	}, info(t, x))
}

func TestGetRequestWithNoStatusYetIsPendingSinceItsCreation(t *testing.T) {
	e := newEnv(t)
	id := e.ID("fresh")
	created := e.CreateDirect(id, nbitest.SimpleSpec("fresh"))
	x := e.WaitCached(id)
	m := x.Object(t)
	require.Equal(t, map[string]any{
		"updateTime":        created.GetCreationTimestamp().UTC().Format(time.RFC3339),
		"message":           "",
		"provisioningPhase": PhasePending,
	}, m["status"])
	require.Equal(t, map[string]any{"nodeClusterId": "", "infrastructureResourceIds": []any{}}, m["provisionedResourceSet"])
}

func TestRequestWrittenStraightToTheAPIServerWithoutNameOrDescription(t *testing.T) {
	e := newEnv(t)
	id := e.ID("direct")
	e.CreateDirect(id, nbitest.SimpleSpec("direct")) // no name, no description: the CRD allows it
	data := e.WaitCached(id).Object(t)["provisioningRequestData"].(map[string]any)
	require.Equal(t, "", data["name"])
	require.Equal(t, "", data["description"])
	require.Equal(t, id, data["provisioningRequestId"])
}

func TestPostCreatesTheRequestAndAnswers201WithItsInfo(t *testing.T) {
	e := newEnv(t)
	id := e.ID("created")
	body := nbitest.RequestBody(id)
	delete(body, "description") // absent: stored and answered as ""
	x := e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, body))
	require.Equal(t, http.StatusCreated, x.Code(), "%s", x.Body)
	require.Equal(t, nbitest.NamedPath(id), x.Resp.Header.Get("Location"))

	stored, err := e.Admin.Resource(v1alpha1.GVR).Get(context.Background(), id, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"name": "edge cluster " + id, "description": "",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{"clusterName": "edge-" + id, "labels": map[string]any{"nephio.org/site-type": "edge"}},
	}, stored.Object["spec"])

	info := info(t, x)
	require.Equal(t, string(stored.GetUID()), info.ProvisioningRequestReference)
	require.Equal(t, id, info.ProvisioningRequestData.ProvisioningRequestID)
	require.Equal(t, "", info.ProvisioningRequestData.Description)
	require.Equal(t, PhasePending, info.Status.ProvisioningPhase)
	require.Equal(t, stored.GetCreationTimestamp().UTC().Format(time.RFC3339), info.Status.UpdateTime)

	e.WaitCached(id)
}

func TestPostOfAnExistingIDIsAConflict(t *testing.T) {
	e := newEnv(t)
	id := e.ID("twice")
	require.Equal(t, http.StatusCreated, e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(id))).Code())
	x := e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(id)))
	require.Equal(t, http.StatusConflict, x.Code())
	require.Contains(t, x.Problem(t).Status, "already exists")
}

func TestPostRefusesIDsThatAreNotLowercaseRFC1123Subdomains(t *testing.T) {
	e := newEnv(t)
	for name, id := range map[string]string{
		"label starting with a hyphen": "a.-b",
		"longer than 253":              strings.Repeat("a.", 126) + "ab", // 254
		"label longer than 63":         strings.Repeat("a", 64),
		"uppercase":                    "Edge-1",
		"empty label":                  "a..b",
		"trailing dot":                 "a.",
		"underscore":                   "a_b",
		"empty":                        "",
	} {
		t.Run(name, func(t *testing.T) {
			x := e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(id)))
			require.Equal(t, http.StatusBadRequest, x.Code(), "%s", x.Body)
			require.Contains(t, x.Problem(t).Status, "provisioningRequestId")
		})
	}
	require.Zero(t, e.APICalls(), "an invalid id is refused here, not sent on")
}

func TestPostRefusesBadBodies(t *testing.T) {
	e := newEnv(t)
	id := e.ID("bad")
	with := func(mut func(map[string]any)) []byte {
		b := nbitest.RequestBody(id)
		mut(b)
		return nbitest.JSONBody(t, b)
	}
	for _, c := range []struct {
		name, body, want string
	}{
		{"malformed JSON", `{"provisioningRequestId": "x",`, "not valid JSON"},
		{"trailing garbage", `{"provisioningRequestId": "x"} {}`, "not valid JSON"},
		{"an array", `[]`, "must be a ProvisioningRequestData object"},
		{"null", `null`, "must be a ProvisioningRequestData object"},
		{"empty", ``, "empty"},
		{"unknown field", string(with(func(b map[string]any) { b["templateParams"] = map[string]any{} })), `"templateParams"`},
		{"missing templateName", string(with(func(b map[string]any) { delete(b, "templateName") })), "missing required field(s): templateName"},
		{"missing id", string(with(func(b map[string]any) { delete(b, "provisioningRequestId") })), "provisioningRequestId"},
		{"templateVersion a number", string(with(func(b map[string]any) { b["templateVersion"] = 3 })), "templateVersion must be a string"},
		{"templateParameters a string", string(with(func(b map[string]any) { b["templateParameters"] = "x" })), "templateParameters must be an object"},
		{"name null", string(with(func(b map[string]any) { b["name"] = nil })), "name must be a string, not null"},
		{"description a number", string(with(func(b map[string]any) { b["description"] = 1 })), "description must be a string"},
		{"no clusterName", string(with(func(b map[string]any) { b["templateParameters"] = map[string]any{} })), "clusterName"},
		{"labels a list", string(with(func(b map[string]any) {
			b["templateParameters"] = map[string]any{"clusterName": "c", "labels": []any{"a"}}
		})), "labels must be an object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := e.Do(http.MethodPost, nbitest.CollectionPath, []byte(c.body))
			require.Equal(t, http.StatusBadRequest, x.Code(), "%s", x.Body)
			require.Contains(t, x.Problem(t).Status, c.want)
		})
	}
	require.Zero(t, e.APICalls())
}

func TestPostNeedsAJSONOrYAMLContentType(t *testing.T) {
	e := newEnv(t)
	body := nbitest.JSONBody(t, nbitest.RequestBody(e.ID("ct")))
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "nonsense"} {
		x := e.Do(http.MethodPost, nbitest.CollectionPath, body, "Content-Type", ct)
		require.Equal(t, http.StatusUnsupportedMediaType, x.Code(), ct)
	}
	x := e.Do(http.MethodPost, nbitest.CollectionPath, body, "Content-Type", "")
	require.Equal(t, http.StatusUnsupportedMediaType, x.Code(), "no Content-Type")
	require.Zero(t, e.APICalls())
}

func TestPostOfMoreThanOneMebibyteIs413(t *testing.T) {
	e := newEnv(t)
	big := `{"provisioningRequestId":"` + e.ID("big") + `","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","pad":"` +
		strings.Repeat("x", query.MaxBodyBytes) + `"}}`
	x := e.Do(http.MethodPost, nbitest.CollectionPath, []byte(big))
	require.Equal(t, http.StatusRequestEntityTooLarge, x.Code())
	require.Zero(t, e.APICalls())
}

func TestPutReplacesTheSpecAndAnswers200(t *testing.T) {
	e := newEnv(t)
	id := e.ID("replaced")
	created := e.CreateDirect(id, map[string]any{
		"name": "old name", "description": "old",
		"templateName": "old-template", "templateVersion": "v1",
		"templateParameters": map[string]any{"clusterName": "old", "extra": "gone after the PUT"},
	})
	e.SetStatus(id, map[string]any{"provisioningStatus": map[string]any{"provisioningState": "progressing"}})

	body := nbitest.RequestBody(id)
	delete(body, "name")
	x := e.Do(http.MethodPut, nbitest.NamedPath(id), nbitest.JSONBody(t, body))
	require.Equal(t, http.StatusOK, x.Code(), "%s", x.Body)
	info := info(t, x)
	require.Equal(t, "", info.ProvisioningRequestData.Name, "PUT replaces: an absent name is now empty")
	require.Equal(t, "nephio-workload-cluster", info.ProvisioningRequestData.TemplateName)
	require.Equal(t, map[string]any{"clusterName": "edge-" + id, "labels": map[string]any{"nephio.org/site-type": "edge"}},
		info.ProvisioningRequestData.TemplateParameters)
	require.Equal(t, string(created.GetUID()), info.ProvisioningRequestReference, "the same request")
	require.Equal(t, PhaseProgressing, info.Status.ProvisioningPhase, "the status is left to the operator")

	stored, err := e.Admin.Resource(v1alpha1.GVR).Get(context.Background(), id, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "progressing", nested(stored, "status", "provisioningStatus", "provisioningState"))
}

func nested(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

func TestPutOfAnAbsentRequestIs404(t *testing.T) {
	e := newEnv(t)
	id := e.ID("absent")
	x := e.Do(http.MethodPut, nbitest.NamedPath(id), nbitest.JSONBody(t, nbitest.RequestBody(id)))
	require.Equal(t, http.StatusNotFound, x.Code())
	_, err := e.Admin.Resource(v1alpha1.GVR).Get(context.Background(), id, metav1.GetOptions{})
	require.True(t, nbitest.IsNotFound(err), "PUT does not create")
}

func TestPutCannotChangeTheID(t *testing.T) {
	e := newEnv(t)
	id := e.ID("fixed")
	e.CreateDirect(id, nbitest.SimpleSpec("fixed"))
	x := e.Do(http.MethodPut, nbitest.NamedPath(id), nbitest.JSONBody(t, nbitest.RequestBody(e.ID("other"))))
	require.Equal(t, http.StatusUnprocessableEntity, x.Code())
	require.Contains(t, x.Problem(t).Status, "cannot be changed")

	body := nbitest.RequestBody(id)
	delete(body, "provisioningRequestId")
	x = e.Do(http.MethodPut, nbitest.NamedPath(id), nbitest.JSONBody(t, body))
	require.Equal(t, http.StatusBadRequest, x.Code(), "the id is required in the body too")
}

func TestDeleteAnswers202ThenDeletingWhileHeldThen404(t *testing.T) {
	e := newEnv(t)
	id := e.ID("doomed")
	const finalizer = "provisioningrequests.o2ims.provisioning.oran.org/cleanup"
	e.CreateDirect(id, nbitest.SimpleSpec("doomed"), finalizer)
	e.SetStatus(id, map[string]any{"provisioningStatus": map[string]any{"provisioningState": "fulfilled"}})
	e.WaitCached(id)

	x := e.Do(http.MethodDelete, nbitest.NamedPath(id), nil)
	require.Equal(t, http.StatusAccepted, x.Code())
	require.Equal(t, nbitest.NamedPath(id), x.Resp.Header.Get("Location"))
	require.Empty(t, x.Body)

	e.Eventually(x.Resp.Header.Get("Location"), func(x *nbitest.Exchange) bool {
		return x.Code() == http.StatusOK && info(t, x).Status.ProvisioningPhase == PhaseDeleting
	}, "DELETING while the finalizer holds it")
	again := e.Do(http.MethodDelete, nbitest.NamedPath(id), nil)
	require.Equal(t, http.StatusAccepted, again.Code(), "deleting twice is accepted")

	_, err := e.Admin.Resource(v1alpha1.GVR).Patch(context.Background(), id, "application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	e.Eventually(nbitest.NamedPath(id), func(x *nbitest.Exchange) bool { return x.Code() == http.StatusNotFound }, "404 once gone")

	require.Equal(t, http.StatusNotFound, e.Do(http.MethodDelete, nbitest.NamedPath(id), nil).Code(), "deleting what is gone")
}

func TestStateDeletingAnswersDeleting(t *testing.T) {
	e := newEnv(t)
	id := e.ID("state-deleting")
	e.CreateDirect(id, nbitest.SimpleSpec("x"))
	e.SetStatus(id, map[string]any{"provisioningStatus": map[string]any{"provisioningState": "deleting"}})
	e.Eventually(nbitest.NamedPath(id), func(x *nbitest.Exchange) bool {
		return x.Code() == http.StatusOK && info(t, x).Status.ProvisioningPhase == PhaseDeleting
	}, "DELETING")
}

func TestNamedRoutesOfAnAbsentOrImpossibleIDAre404(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{nbitest.NamedPath(e.ID("nobody")), nbitest.NamedPath("UPPER"), nbitest.NamedPath("a.-b"), nbitest.NamedPath("a%2Fb")} {
		require.Equal(t, http.StatusNotFound, e.Do(http.MethodGet, p, nil).Code(), p)
		require.Equal(t, http.StatusNotFound, e.Do(http.MethodDelete, p, nil).Code(), p)
	}
}

func TestUnknownRoutesWrongMethodsAndTheOldTrailingSpaceRoute(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{
		"/", "/nope", Root, Root + "/v2/provisioningRequests",
		nbitest.CollectionPath + "%20",          // the Python route that ended in a space
		nbitest.CollectionPath + "%20/x",        //
		nbitest.CollectionPath + "/",            // no id
		nbitest.CollectionPath + "/a/b",         // too deep
		Root + "/v1/../v1/provisioningRequests", // not canonical: never redirected
		"/o2ims-infrastructureprovisioning/v1/provisioningrequests",
	} {
		x := e.Do(http.MethodGet, p, nil)
		require.Equal(t, http.StatusNotFound, x.Code(), p)
		require.Equal(t, query.MediaJSON, x.Resp.Header.Get("Content-Type"), p)
	}

	x := e.Do(http.MethodPatch, nbitest.NamedPath(e.ID("x")), []byte(`{}`))
	require.Equal(t, http.StatusMethodNotAllowed, x.Code())
	require.Equal(t, "GET, HEAD, PUT, DELETE", x.Resp.Header.Get("Allow"))
	x = e.Do(http.MethodDelete, nbitest.CollectionPath, nil)
	require.Equal(t, http.StatusMethodNotAllowed, x.Code())
	require.Equal(t, "GET, HEAD, POST", x.Resp.Header.Get("Allow"))
	x = e.Do(http.MethodPost, Root+"/api_versions", nil)
	require.Equal(t, http.StatusMethodNotAllowed, x.Code())
	require.Equal(t, "GET, HEAD", x.Resp.Header.Get("Allow"))
}

func TestAnswersInYAMLWhenAskedAndRefusesWhatItCannotAnswer(t *testing.T) {
	e := newEnv(t)
	id := e.ID("yaml")
	yamlBody := []byte("provisioningRequestId: " + id + "\ntemplateName: t\ntemplateVersion: v1\ntemplateParameters:\n  clusterName: c\n  replicas: 3\n")
	x := e.Do(http.MethodPost, nbitest.CollectionPath, yamlBody, "Content-Type", query.MediaYAML, "Accept", query.MediaYAML)
	require.Equal(t, http.StatusCreated, x.Code(), "%s", x.Body)
	require.Equal(t, query.MediaYAML, x.Resp.Header.Get("Content-Type"))
	require.Contains(t, string(x.Body), "provisioningRequestId: "+id)
	require.Equal(t, map[string]any{"clusterName": "c", "replicas": float64(3)}, info(t, x).ProvisioningRequestData.TemplateParameters)

	e.WaitCached(id)
	x = e.Do(http.MethodGet, nbitest.NamedPath(id), nil, "Accept", "application/yaml, application/json;q=0.5")
	require.Equal(t, query.MediaYAML, x.Resp.Header.Get("Content-Type"))
	x = e.Do(http.MethodGet, nbitest.CollectionPath, nil, "Accept", query.MediaYAML)
	require.Equal(t, query.MediaYAML, x.Resp.Header.Get("Content-Type"))
	require.Len(t, list(t, x).Items, 1)

	x = e.Do(http.MethodGet, nbitest.NamedPath(e.ID("none")), nil, "Accept", query.MediaYAML)
	require.Equal(t, http.StatusNotFound, x.Code())
	require.Equal(t, query.MediaYAML, x.Resp.Header.Get("Content-Type"), "errors in YAML too")
	require.True(t, strings.HasPrefix(string(x.Body), "detail:"), "%s", x.Body)

	x = e.Do(http.MethodGet, nbitest.CollectionPath, nil, "Accept", "text/html")
	require.Equal(t, http.StatusNotAcceptable, x.Code())
	require.Equal(t, query.MediaJSON, x.Resp.Header.Get("Content-Type"))
	for _, accept := range []string{"*/*", "application/*", "text/html, */*;q=0.1", ""} {
		x = e.Do(http.MethodGet, nbitest.CollectionPath, nil, "Accept", accept)
		require.Equal(t, http.StatusOK, x.Code(), accept)
		require.Equal(t, query.MediaJSON, x.Resp.Header.Get("Content-Type"), accept)
	}
}

func TestTheLowercaseRootServesTheSameAPI(t *testing.T) {
	e := newEnv(t)
	id := e.ID("lower")
	lower := rootLower + "/v1/provisioningRequests"
	x := e.Do(http.MethodPost, lower, nbitest.JSONBody(t, nbitest.RequestBody(id)))
	require.Equal(t, http.StatusCreated, x.Code())
	require.Equal(t, lower+"/"+id, x.Resp.Header.Get("Location"))
	e.Eventually(lower+"/"+id, func(x *nbitest.Exchange) bool { return x.Code() == http.StatusOK }, "cached")
	require.Len(t, list(t, e.Do(http.MethodGet, lower, nil)).Items, 1)
	require.Equal(t, http.StatusOK, e.Do(http.MethodPut, lower+"/"+id, nbitest.JSONBody(t, nbitest.RequestBody(id))).Code())
	x = e.Do(http.MethodDelete, lower+"/"+id, nil)
	require.Equal(t, http.StatusAccepted, x.Code())
	require.Equal(t, lower+"/"+id, x.Resp.Header.Get("Location"))
}

func TestAPIVersions(t *testing.T) {
	e := newEnv(t)
	for path, prefix := range map[string]string{
		Root + "/api_versions":         Root + "/v1",
		Root + "/v1/api_versions":      Root + "/v1",
		rootLower + "/api_versions":    rootLower + "/v1",
		rootLower + "/v1/api_versions": rootLower + "/v1",
	} {
		x := e.Do(http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, x.Code())
		require.JSONEq(t, `{"uriPrefix":"`+prefix+`","apiVersions":[{"version":"1.1.0"}]}`, string(x.Body))
	}
}

func TestReadsComeOnlyFromTheStore(t *testing.T) {
	e := newEnv(t)
	id := e.ID("cached")
	e.CreateDirect(id, nbitest.SimpleSpec("cached"))
	e.WaitCached(id)
	before := e.APICalls()
	for i := 0; i < 20; i++ {
		require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.NamedPath(id), nil).Code())
		require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.CollectionPath+"?filter=(eq,status/provisioningPhase,PENDING)", nil).Code())
		require.Equal(t, http.StatusNotFound, e.Do(http.MethodGet, nbitest.NamedPath(e.ID("missing")), nil).Code())
	}
	require.Equal(t, before, e.APICalls(), "GETs made API calls: %v", e.APIRec.Requests())

	require.Equal(t, http.StatusCreated, e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(e.ID("written")))).Code())
	require.Equal(t, before+1, e.APICalls(), "a POST is one API call")
}

func TestHeadOfTheCollection(t *testing.T) {
	e := newEnv(t)
	x := e.Do(http.MethodHead, nbitest.CollectionPath, nil)
	assert.Equal(t, http.StatusOK, x.Code())
	assert.Empty(t, x.Body)
}

func TestNewNeedsAStore(t *testing.T) {
	_, err := newServer(nbi.Config{}, nil, nil, nil, nil, nil)
	require.Error(t, err)
}
