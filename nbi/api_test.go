package nbi

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
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

func TestListIsEmptyWithoutRequestsAndSortedWithThem(t *testing.T) {
	e := newEnv(t)
	x := e.do(http.MethodGet, collectionPath, nil)
	require.Equal(t, http.StatusOK, x.code())
	require.JSONEq(t, `{"items":[]}`, string(x.body))
	require.Empty(t, x.resp.Header.Get("Link"))

	for _, n := range []string{"charlie", "alpha", "bravo"} {
		e.createDirect(e.id(n), simpleSpec("c-"+n))
	}
	e.setStatus(e.id("bravo"), map[string]any{"provisioningStatus": map[string]any{
		"provisioningState": "progressing", "provisioningMessage": "rendering",
		"provisioningUpdateTime": "2026-11-30T10:00:00Z",
	}})
	x = e.eventually(collectionPath, func(x *exchange) bool {
		l := x.list(t)
		return len(l.Items) == 3 && l.Items[1].Status.ProvisioningPhase == PhaseProgressing
	}, "three requests listed")
	l := x.list(t)
	require.Equal(t, []string{e.id("alpha"), e.id("bravo"), e.id("charlie")}, ids(l))
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
	id := e.id("fulfilled")
	created := e.createDirect(id, map[string]any{
		"name": "edge one", "description": "the first edge",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{"clusterName": "edge-1", "nodes": []any{int64(1), int64(2)}},
	})
	e.setStatus(id, map[string]any{
		"provisioningStatus": map[string]any{
			"provisioningState": "fulfilled", "provisioningMessage": "Cluster resource created",
			"provisioningUpdateTime": "2026-11-30T10:11:12Z",
		},
		"provisionedResourceSet": map[string]any{
			"oCloudNodeClusterId":             "0b7a1f6e-cluster-uid",
			"oCloudInfrastructureResourceIds": []any{"host-a", "host-b"},
		},
	})
	x := e.eventually(namedPath(id), func(x *exchange) bool {
		return x.code() == http.StatusOK && x.info(t).Status.ProvisioningPhase == PhaseFulfilled
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
	}, x.info(t))
}

func TestGetRequestWithNoStatusYetIsPendingSinceItsCreation(t *testing.T) {
	e := newEnv(t)
	id := e.id("fresh")
	created := e.createDirect(id, simpleSpec("fresh"))
	x := e.waitCached(id)
	m := x.object(t)
	require.Equal(t, map[string]any{
		"updateTime":        created.GetCreationTimestamp().UTC().Format(time.RFC3339),
		"message":           "",
		"provisioningPhase": PhasePending,
	}, m["status"])
	require.Equal(t, map[string]any{"nodeClusterId": "", "infrastructureResourceIds": []any{}}, m["provisionedResourceSet"])
}

func TestRequestWrittenStraightToTheAPIServerWithoutNameOrDescription(t *testing.T) {
	e := newEnv(t)
	id := e.id("direct")
	e.createDirect(id, simpleSpec("direct")) // no name, no description: the CRD allows it
	data := e.waitCached(id).object(t)["provisioningRequestData"].(map[string]any)
	require.Equal(t, "", data["name"])
	require.Equal(t, "", data["description"])
	require.Equal(t, id, data["provisioningRequestId"])
}

func TestPostCreatesTheRequestAndAnswers201WithItsInfo(t *testing.T) {
	e := newEnv(t)
	id := e.id("created")
	body := requestBody(id)
	delete(body, "description") // absent: stored and answered as ""
	x := e.do(http.MethodPost, collectionPath, jsonBody(t, body))
	require.Equal(t, http.StatusCreated, x.code(), "%s", x.body)
	require.Equal(t, namedPath(id), x.resp.Header.Get("Location"))

	stored, err := e.admin.Resource(v1alpha1.GVR).Get(context.Background(), id, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"name": "edge cluster " + id, "description": "",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{"clusterName": "edge-" + id, "labels": map[string]any{"nephio.org/site-type": "edge"}},
	}, stored.Object["spec"])

	info := x.info(t)
	require.Equal(t, string(stored.GetUID()), info.ProvisioningRequestReference)
	require.Equal(t, id, info.ProvisioningRequestData.ProvisioningRequestID)
	require.Equal(t, "", info.ProvisioningRequestData.Description)
	require.Equal(t, PhasePending, info.Status.ProvisioningPhase)
	require.Equal(t, stored.GetCreationTimestamp().UTC().Format(time.RFC3339), info.Status.UpdateTime)

	e.waitCached(id)
}

func TestPostOfAnExistingIDIsAConflict(t *testing.T) {
	e := newEnv(t)
	id := e.id("twice")
	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(id))).code())
	x := e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(id)))
	require.Equal(t, http.StatusConflict, x.code())
	require.Contains(t, x.problem(t).Status, "already exists")
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
			x := e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(id)))
			require.Equal(t, http.StatusBadRequest, x.code(), "%s", x.body)
			require.Contains(t, x.problem(t).Status, "provisioningRequestId")
		})
	}
	require.Zero(t, e.apiCalls(), "an invalid id is refused here, not sent on")
}

func TestPostRefusesBadBodies(t *testing.T) {
	e := newEnv(t)
	id := e.id("bad")
	with := func(mut func(map[string]any)) []byte {
		b := requestBody(id)
		mut(b)
		return jsonBody(t, b)
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
			x := e.do(http.MethodPost, collectionPath, []byte(c.body))
			require.Equal(t, http.StatusBadRequest, x.code(), "%s", x.body)
			require.Contains(t, x.problem(t).Status, c.want)
		})
	}
	require.Zero(t, e.apiCalls())
}

func TestPostNeedsAJSONOrYAMLContentType(t *testing.T) {
	e := newEnv(t)
	body := jsonBody(t, requestBody(e.id("ct")))
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "nonsense"} {
		x := e.do(http.MethodPost, collectionPath, body, "Content-Type", ct)
		require.Equal(t, http.StatusUnsupportedMediaType, x.code(), ct)
	}
	x := e.do(http.MethodPost, collectionPath, body, "Content-Type", "")
	require.Equal(t, http.StatusUnsupportedMediaType, x.code(), "no Content-Type")
	require.Zero(t, e.apiCalls())
}

func TestPostOfMoreThanOneMebibyteIs413(t *testing.T) {
	e := newEnv(t)
	big := `{"provisioningRequestId":"` + e.id("big") + `","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","pad":"` +
		strings.Repeat("x", query.MaxBodyBytes) + `"}}`
	x := e.do(http.MethodPost, collectionPath, []byte(big))
	require.Equal(t, http.StatusRequestEntityTooLarge, x.code())
	require.Zero(t, e.apiCalls())
}

func TestPutReplacesTheSpecAndAnswers200(t *testing.T) {
	e := newEnv(t)
	id := e.id("replaced")
	created := e.createDirect(id, map[string]any{
		"name": "old name", "description": "old",
		"templateName": "old-template", "templateVersion": "v1",
		"templateParameters": map[string]any{"clusterName": "old", "extra": "gone after the PUT"},
	})
	e.setStatus(id, map[string]any{"provisioningStatus": map[string]any{"provisioningState": "progressing"}})

	body := requestBody(id)
	delete(body, "name")
	x := e.do(http.MethodPut, namedPath(id), jsonBody(t, body))
	require.Equal(t, http.StatusOK, x.code(), "%s", x.body)
	info := x.info(t)
	require.Equal(t, "", info.ProvisioningRequestData.Name, "PUT replaces: an absent name is now empty")
	require.Equal(t, "nephio-workload-cluster", info.ProvisioningRequestData.TemplateName)
	require.Equal(t, map[string]any{"clusterName": "edge-" + id, "labels": map[string]any{"nephio.org/site-type": "edge"}},
		info.ProvisioningRequestData.TemplateParameters)
	require.Equal(t, string(created.GetUID()), info.ProvisioningRequestReference, "the same request")
	require.Equal(t, PhaseProgressing, info.Status.ProvisioningPhase, "the status is left to the operator")

	stored, err := e.admin.Resource(v1alpha1.GVR).Get(context.Background(), id, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "progressing", nested(stored, "status", "provisioningStatus", "provisioningState"))
}

func nested(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

func TestPutOfAnAbsentRequestIs404(t *testing.T) {
	e := newEnv(t)
	id := e.id("absent")
	x := e.do(http.MethodPut, namedPath(id), jsonBody(t, requestBody(id)))
	require.Equal(t, http.StatusNotFound, x.code())
	_, err := e.admin.Resource(v1alpha1.GVR).Get(context.Background(), id, metav1.GetOptions{})
	require.True(t, isNotFound(err), "PUT does not create")
}

func TestPutCannotChangeTheID(t *testing.T) {
	e := newEnv(t)
	id := e.id("fixed")
	e.createDirect(id, simpleSpec("fixed"))
	x := e.do(http.MethodPut, namedPath(id), jsonBody(t, requestBody(e.id("other"))))
	require.Equal(t, http.StatusUnprocessableEntity, x.code())
	require.Contains(t, x.problem(t).Status, "cannot be changed")

	body := requestBody(id)
	delete(body, "provisioningRequestId")
	x = e.do(http.MethodPut, namedPath(id), jsonBody(t, body))
	require.Equal(t, http.StatusBadRequest, x.code(), "the id is required in the body too")
}

func TestDeleteAnswers202ThenDeletingWhileHeldThen404(t *testing.T) {
	e := newEnv(t)
	id := e.id("doomed")
	const finalizer = "provisioningrequests.o2ims.provisioning.oran.org/cleanup"
	e.createDirect(id, simpleSpec("doomed"), finalizer)
	e.setStatus(id, map[string]any{"provisioningStatus": map[string]any{"provisioningState": "fulfilled"}})
	e.waitCached(id)

	x := e.do(http.MethodDelete, namedPath(id), nil)
	require.Equal(t, http.StatusAccepted, x.code())
	require.Equal(t, namedPath(id), x.resp.Header.Get("Location"))
	require.Empty(t, x.body)

	e.eventually(x.resp.Header.Get("Location"), func(x *exchange) bool {
		return x.code() == http.StatusOK && x.info(t).Status.ProvisioningPhase == PhaseDeleting
	}, "DELETING while the finalizer holds it")
	again := e.do(http.MethodDelete, namedPath(id), nil)
	require.Equal(t, http.StatusAccepted, again.code(), "deleting twice is accepted")

	_, err := e.admin.Resource(v1alpha1.GVR).Patch(context.Background(), id, "application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	e.eventually(namedPath(id), func(x *exchange) bool { return x.code() == http.StatusNotFound }, "404 once gone")

	require.Equal(t, http.StatusNotFound, e.do(http.MethodDelete, namedPath(id), nil).code(), "deleting what is gone")
}

func TestStateDeletingAnswersDeleting(t *testing.T) {
	e := newEnv(t)
	id := e.id("state-deleting")
	e.createDirect(id, simpleSpec("x"))
	e.setStatus(id, map[string]any{"provisioningStatus": map[string]any{"provisioningState": "deleting"}})
	e.eventually(namedPath(id), func(x *exchange) bool {
		return x.code() == http.StatusOK && x.info(t).Status.ProvisioningPhase == PhaseDeleting
	}, "DELETING")
}

func TestNamedRoutesOfAnAbsentOrImpossibleIDAre404(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{namedPath(e.id("nobody")), namedPath("UPPER"), namedPath("a.-b"), namedPath("a%2Fb")} {
		require.Equal(t, http.StatusNotFound, e.do(http.MethodGet, p, nil).code(), p)
		require.Equal(t, http.StatusNotFound, e.do(http.MethodDelete, p, nil).code(), p)
	}
}

func TestUnknownRoutesWrongMethodsAndTheOldTrailingSpaceRoute(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{
		"/", "/nope", apiRoot, apiRoot + "/v2/provisioningRequests",
		collectionPath + "%20",                     // the Python route that ended in a space
		collectionPath + "%20/x",                   //
		collectionPath + "/",                       // no id
		collectionPath + "/a/b",                    // too deep
		apiRoot + "/v1/../v1/provisioningRequests", // not canonical: never redirected
		"/o2ims-infrastructureprovisioning/v1/provisioningrequests",
	} {
		x := e.do(http.MethodGet, p, nil)
		require.Equal(t, http.StatusNotFound, x.code(), p)
		require.Equal(t, mediaJSON, x.resp.Header.Get("Content-Type"), p)
	}

	x := e.do(http.MethodPatch, namedPath(e.id("x")), []byte(`{}`))
	require.Equal(t, http.StatusMethodNotAllowed, x.code())
	require.Equal(t, "GET, HEAD, PUT, DELETE", x.resp.Header.Get("Allow"))
	x = e.do(http.MethodDelete, collectionPath, nil)
	require.Equal(t, http.StatusMethodNotAllowed, x.code())
	require.Equal(t, "GET, HEAD, POST", x.resp.Header.Get("Allow"))
	x = e.do(http.MethodPost, apiRoot+"/api_versions", nil)
	require.Equal(t, http.StatusMethodNotAllowed, x.code())
	require.Equal(t, "GET, HEAD", x.resp.Header.Get("Allow"))
}

func TestAnswersInYAMLWhenAskedAndRefusesWhatItCannotAnswer(t *testing.T) {
	e := newEnv(t)
	id := e.id("yaml")
	yamlBody := []byte("provisioningRequestId: " + id + "\ntemplateName: t\ntemplateVersion: v1\ntemplateParameters:\n  clusterName: c\n  replicas: 3\n")
	x := e.do(http.MethodPost, collectionPath, yamlBody, "Content-Type", mediaYAML, "Accept", mediaYAML)
	require.Equal(t, http.StatusCreated, x.code(), "%s", x.body)
	require.Equal(t, mediaYAML, x.resp.Header.Get("Content-Type"))
	require.Contains(t, string(x.body), "provisioningRequestId: "+id)
	require.Equal(t, map[string]any{"clusterName": "c", "replicas": float64(3)}, x.info(t).ProvisioningRequestData.TemplateParameters)

	e.waitCached(id)
	x = e.do(http.MethodGet, namedPath(id), nil, "Accept", "application/yaml, application/json;q=0.5")
	require.Equal(t, mediaYAML, x.resp.Header.Get("Content-Type"))
	x = e.do(http.MethodGet, collectionPath, nil, "Accept", mediaYAML)
	require.Equal(t, mediaYAML, x.resp.Header.Get("Content-Type"))
	require.Len(t, x.list(t).Items, 1)

	x = e.do(http.MethodGet, namedPath(e.id("none")), nil, "Accept", mediaYAML)
	require.Equal(t, http.StatusNotFound, x.code())
	require.Equal(t, mediaYAML, x.resp.Header.Get("Content-Type"), "errors in YAML too")
	require.True(t, strings.HasPrefix(string(x.body), "detail:"), "%s", x.body)

	x = e.do(http.MethodGet, collectionPath, nil, "Accept", "text/html")
	require.Equal(t, http.StatusNotAcceptable, x.code())
	require.Equal(t, mediaJSON, x.resp.Header.Get("Content-Type"))
	for _, accept := range []string{"*/*", "application/*", "text/html, */*;q=0.1", ""} {
		x = e.do(http.MethodGet, collectionPath, nil, "Accept", accept)
		require.Equal(t, http.StatusOK, x.code(), accept)
		require.Equal(t, mediaJSON, x.resp.Header.Get("Content-Type"), accept)
	}
}

func TestTheLowercaseRootServesTheSameAPI(t *testing.T) {
	e := newEnv(t)
	id := e.id("lower")
	lower := apiRootLower + "/v1/provisioningRequests"
	x := e.do(http.MethodPost, lower, jsonBody(t, requestBody(id)))
	require.Equal(t, http.StatusCreated, x.code())
	require.Equal(t, lower+"/"+id, x.resp.Header.Get("Location"))
	e.eventually(lower+"/"+id, func(x *exchange) bool { return x.code() == http.StatusOK }, "cached")
	require.Len(t, e.do(http.MethodGet, lower, nil).list(t).Items, 1)
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, lower+"/"+id, jsonBody(t, requestBody(id))).code())
	x = e.do(http.MethodDelete, lower+"/"+id, nil)
	require.Equal(t, http.StatusAccepted, x.code())
	require.Equal(t, lower+"/"+id, x.resp.Header.Get("Location"))
}

func TestAPIVersions(t *testing.T) {
	e := newEnv(t)
	for path, prefix := range map[string]string{
		apiRoot + "/api_versions":         apiRoot + "/v1",
		apiRoot + "/v1/api_versions":      apiRoot + "/v1",
		apiRootLower + "/api_versions":    apiRootLower + "/v1",
		apiRootLower + "/v1/api_versions": apiRootLower + "/v1",
	} {
		x := e.do(http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, x.code())
		require.JSONEq(t, `{"uriPrefix":"`+prefix+`","apiVersions":[{"version":"1.1.0"}]}`, string(x.body))
	}
}

func TestReadsComeOnlyFromTheStore(t *testing.T) {
	e := newEnv(t)
	id := e.id("cached")
	e.createDirect(id, simpleSpec("cached"))
	e.waitCached(id)
	before := e.apiCalls()
	for i := 0; i < 20; i++ {
		require.Equal(t, http.StatusOK, e.do(http.MethodGet, namedPath(id), nil).code())
		require.Equal(t, http.StatusOK, e.do(http.MethodGet, collectionPath+"?filter=(eq,status/provisioningPhase,PENDING)", nil).code())
		require.Equal(t, http.StatusNotFound, e.do(http.MethodGet, namedPath(e.id("missing")), nil).code())
	}
	require.Equal(t, before, e.apiCalls(), "GETs made API calls: %v", e.api.Requests())

	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(e.id("written")))).code())
	require.Equal(t, before+1, e.apiCalls(), "a POST is one API call")
}

func TestHeadOfTheCollection(t *testing.T) {
	e := newEnv(t)
	x := e.do(http.MethodHead, collectionPath, nil)
	assert.Equal(t, http.StatusOK, x.code())
	assert.Empty(t, x.body)
}
