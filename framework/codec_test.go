package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// codecBodies are answers as an API server sends them, with what decoding must keep exact: integers past
// float64's precision, floats, nulls, escapes, nesting, an empty object. The first also holds a number no
// float64 can hold, which both codecs must refuse; trimmed of it (validBody) it decodes.
var codecBodies = []string{
	`{"apiVersion":"test.o2ims.io/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"42","uid":"u-1","labels":{"a":"b"}},"spec":{"n":9007199254740993,"f":1.5,"e":1e3,"neg":-7,"big":1e400000000000,"s":"\u00e9\"\\","null":null,"list":[1,"x",{"y":[true,false]}],"empty":{}},"status":{"counter":3}}`,
	`{"apiVersion":"v1","kind":"Status","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}`,
	`{"apiVersion":"test.o2ims.io/v1","kind":"WidgetList","metadata":{"resourceVersion":"9"},"items":[{"apiVersion":"test.o2ims.io/v1","kind":"Widget","metadata":{"name":"a"}}]}`,
	`{"metadata":{"name":"no-kind"}}`,
	`{"kind":"Widget","metadata":{"name":"no-version"}}`,
	`{"apiVersion":"test.o2ims.io/","kind":"Widget","metadata":{"name":"empty-version"}}`,
	`[1,2]`,
	`{"apiVersion":"test.o2ims.io/v1","kind":"Widget","metadata":{"name":"w"}} trailing`,
}

var validBody = codecBodies[0][:strings.Index(codecBodies[0], `,"big"`)] + `}}`

func stockCodec() runtime.NegotiatedSerializer {
	return dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
}

func jsonInfo(t *testing.T, ns runtime.NegotiatedSerializer) runtime.SerializerInfo {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	return info
}

// decodeBoth decodes body with client-go's dynamic codec and with ours.
func decodeBoth(t *testing.T, body string, into func() runtime.Object) (stock, ours runtime.Object, stockErr, oursErr error) {
	t.Helper()
	s, o := jsonInfo(t, stockCodec()).Serializer, jsonInfo(t, newUnstructuredCodec(stockCodec(), codecOptions{})).Serializer
	stock, _, stockErr = s.Decode([]byte(body), nil, into())
	ours, _, oursErr = o.Decode([]byte(body), nil, into())
	return
}

// Every answer decodes to exactly what client-go's own codec makes of it, into an Unstructured (a GET, a
// PATCH, a POST) and into nothing (a watch event's object), and fails where it fails.
func TestCodecDecodesAsClientGoDoes(t *testing.T) {
	intos := map[string]func() runtime.Object{
		"into an Unstructured": func() runtime.Object { return &unstructured.Unstructured{} },
		"into nothing":         func() runtime.Object { return nil },
	}
	for name, into := range intos {
		for i, body := range codecBodies {
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				stock, ours, stockErr, oursErr := decodeBoth(t, body, into)
				if stockErr != nil {
					assert.Error(t, oursErr, "client-go refuses it: %v", stockErr)
					return
				}
				require.NoError(t, oursErr)
				assert.Equal(t, stock, ours)
				assert.IsType(t, stock, ours)
			})
		}
	}
	// The one valid body decodes with int64 and float64 where client-go has them.
	_, ours, _, err := decodeBoth(t, validBody, func() runtime.Object { return nil })
	require.NoError(t, err)
	spec := ours.(*unstructured.Unstructured).Object["spec"].(map[string]any)
	assert.Equal(t, int64(9007199254740993), spec["n"])
	assert.Equal(t, 1.5, spec["f"])
	assert.Equal(t, float64(1000), spec["e"])
	// A typed target (an error body read as a Status) is client-go's business, unchanged.
	st := &metav1.Status{}
	_, _, err = jsonInfo(t, newUnstructuredCodec(stockCodec(), codecOptions{})).Serializer.Decode([]byte(codecBodies[1]), nil, st)
	require.NoError(t, err)
	assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
	assert.EqualValues(t, 410, st.Code)
}

type watchEvent struct {
	Type   watch.EventType
	Object runtime.Object
}

// A watch stream decodes to the same events, in order, as with client-go's codec: objects, a bookmark, an
// ERROR event carrying a Status (the reflector turns it into a 410 and re-lists), and a bad event type
// refused as client-go refuses it.
func TestCodecDecodesWatchStreamsAsClientGoDoes(t *testing.T) {
	good := `{"type":"ADDED","object":` + validBody + `}
{"type":"MODIFIED","object":{"apiVersion":"test.o2ims.io/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"43"},"status":{"counter":4}}}
{"type":"BOOKMARK","object":{"apiVersion":"test.o2ims.io/v1","kind":"Widget","metadata":{"resourceVersion":"50","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"DELETED","object":{"apiVersion":"test.o2ims.io/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"51"}}}
{"type":"ERROR","object":` + codecBodies[1] + `}
`
	stock, err := decodeStreamFrom(t, stockCodec(), good, asIs)
	require.NoError(t, err)
	ours, err := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{}), good, asIs)
	require.NoError(t, err)
	require.Len(t, stock, 5)
	assert.Equal(t, stock, ours)
	assert.IsType(t, &metav1.Status{}, ours[4].Object, "an ERROR event's Status stays typed, as client-go gives it")

	for _, bad := range []string{
		`{"type":"SURPRISE","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"w"}}}` + "\n",
		`{"type":"ADDED","object":{"metadata":{"name":"no-kind"}}}` + "\n",
		`{"type":"ADDED","object":` + "\n",
	} {
		_, stockErr := decodeStreamFrom(t, stockCodec(), bad, asIs)
		_, oursErr := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{}), bad, asIs)
		assert.Error(t, stockErr, bad)
		assert.Error(t, oursErr, bad)
	}
}

// On the real API server, what our clients write, read back, patch and watch is what client-go's stock
// dynamic client reads: the codec changes the cost of decoding, not the objects (but for the managedFields
// the informers' client leaves out).
func TestClientsReadWhatTheAPIServerHolds(t *testing.T) {
	srv := kubeapi.Shared(t)
	clients, err := NewClients(srv.AdminConfig(), DefaultClientOptions())
	require.NoError(t, err)
	stock, err := dynamic.NewForConfig(srv.AdminConfig())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ri := clients.Dynamic.Resource(widgetGVR)
	w, err := clients.watch.Resource(widgetGVR).Watch(ctx, metav1.ListOptions{LabelSelector: "test=codec"})
	require.NoError(t, err)
	defer w.Stop()

	u := widget("", "codec-widget", map[string]any{"n": int64(9007199254740993), "f": 0.25, "s": "é\"", "l": []any{int64(1), "x"}})
	u.SetLabels(map[string]string{"test": "codec"})
	created, err := ri.Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ri.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	patched, err := ri.Patch(ctx, u.GetName(), "application/merge-patch+json", []byte(`{"status":{"counter":7}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)

	got, err := stock.Resource(widgetGVR).Get(ctx, u.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, got.Object, patched.Object, "a PATCH's answer is the object as the server holds it")
	assert.Equal(t, created.Object["spec"], got.Object["spec"])
	assert.Equal(t, int64(9007199254740993), got.Object["spec"].(map[string]any)["n"])

	var seen []*unstructured.Unstructured
	for len(seen) < 2 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				seen = append(seen, ev.Object.(*unstructured.Unstructured))
			}
		case <-ctx.Done():
			t.Fatalf("the watch gave %d of 2 events", len(seen))
		}
	}
	// The informers' client reads events without managedFields (codecOptions); the rest is what was written.
	for i, want := range []*unstructured.Unstructured{created, got} {
		require.NotEmpty(t, want.GetManagedFields(), "the server keeps managedFields, and the other clients read them")
		want = want.DeepCopy()
		unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
		assert.Equal(t, want.Object, seen[i].Object, "event %d is the object as written (ADDED, then MODIFIED)", i)
	}
}

// BenchmarkDecodeWatchEvent decodes one watch event of a ProvisioningRequest-sized object (1.5 KiB), with
// client-go's codec and with ours.
func BenchmarkDecodeWatchEvent(b *testing.B) {
	status := `"status":{"provisioningStatus":{"provisioningState":"fulfilled","provisioningMessage":"Provisioning request has completed successfully","provisioningUpdateTime":"2026-12-01T14:00:00Z"},"provisionedResourceSet":{"oCloudNodeClusterId":"5f1c0e9e-7a61-4c1e-9a55-0d2c4b1f7e21","oCloudInfrastructureResourceIds":["a","b","c"]}}`
	obj := `{"apiVersion":"o2ims.provisioning.oran.org/v1alpha1","kind":"ProvisioningRequest","metadata":{"name":"req-0001","uid":"0f0e5b1c-1c7e-4a5b-9f43-2b9a4c3d2e1f","resourceVersion":"123456","generation":1,"creationTimestamp":"2026-12-01T14:00:00Z","labels":{"o2ims-bench/run":"load"},"annotations":{"provisioningrequests.o2ims.provisioning.oran.org/last-handled-configuration":"{\"spec\":{\"name\":\"req\",\"templateName\":\"nephio-workload-cluster\",\"templateVersion\":\"v3.0.0\",\"templateParameters\":{\"clusterName\":\"edge-0001\",\"labels\":{\"nephio.org/site-type\":\"edge\",\"nephio.org/region\":\"europe-paris-west\"}}}}"},"finalizers":["provisioningrequests.o2ims.provisioning.oran.org/finalizer"]},"spec":{"name":"req","description":"a bench request","templateName":"nephio-workload-cluster","templateVersion":"v3.0.0","templateParameters":{"clusterName":"edge-0001","labels":{"nephio.org/site-type":"edge","nephio.org/region":"europe-paris-west","nephio.org/owner":"nephio-o2ims"}}},` + status + `}`
	event := []byte(`{"type":"MODIFIED","object":` + obj + "}\n")
	for _, c := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{{"client-go", stockCodec()}, {"ours", newUnstructuredCodec(stockCodec(), codecOptions{})}} {
		info, _ := runtime.SerializerInfoForMediaType(c.ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(event)))
			for b.Loop() {
				frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(event)))
				d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), info.Serializer)
				if _, _, err := d.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Events and the Lease reach the real API server as protobuf, and read back (as JSON, by kubectl's
// client) as what was sent.
func TestBuiltInKindsTravelAsProtobuf(t *testing.T) {
	srv := kubeapi.Shared(t)
	var mu sync.Mutex
	sent := map[string]string{} // resource → Content-Type of its POST
	cfg := srv.AdminConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPost {
				mu.Lock()
				sent[path.Base(req.URL.Path)] = req.Header.Get("Content-Type")
				mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	clients, err := NewClients(cfg, DefaultClientOptions())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "protobuf-event", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Widget", Name: "protobuf", APIVersion: "test.o2ims.io/v1"},
		Reason:         "Progressing", Message: "Cluster resource creation ongoing — é", Type: corev1.EventTypeNormal, Count: 1,
	}
	_, err = clients.Kubernetes.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = srv.AdminClientset().CoreV1().Events("default").Delete(context.Background(), ev.Name, metav1.DeleteOptions{})
	})
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "protobuf-lease", Namespace: "default"}}
	_, err = clients.leaseClient().CoordinationV1().Leases("default").Create(ctx, lease, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = srv.AdminClientset().CoordinationV1().Leases("default").Delete(context.Background(), lease.Name, metav1.DeleteOptions{})
	})

	mu.Lock()
	assert.Equal(t, runtime.ContentTypeProtobuf, sent["events"])
	assert.Equal(t, runtime.ContentTypeProtobuf, sent["leases"])
	mu.Unlock()
	got, err := srv.AdminClientset().CoreV1().Events("default").Get(ctx, ev.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ev.Message, got.Message)
	assert.Equal(t, ev.InvolvedObject, got.InvolvedObject)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A patch through the identity-only path reaches the server as the dynamic client's would (the same
// path, namespaced or not, core group or not, subresource) and answers the version and uid the server
// holds; its errors are the dynamic client's (a stale version conflicts, a missing object is not found).
func TestPatchIdentityAnswersWhatTheServerWrote(t *testing.T) {
	srv := kubeapi.Shared(t)
	clients, err := NewClients(srv.AdminConfig(), DefaultClientOptions())
	require.NoError(t, err)
	pr := clients.Dynamic.(*perResource)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	u := widget("identity", "identity-widget", map[string]any{"a": "b"})
	created, err := clients.Dynamic.Resource(widgetGVR).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = clients.Dynamic.Resource(widgetGVR).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{})
	})

	w, err := pr.patchIdentity(ctx, widgetGVR, "", u.GetName(), []byte(`{"status":{"phase":"done"}}`), "status")
	require.NoError(t, err)
	got, err := clients.Dynamic.Resource(widgetGVR).Get(ctx, u.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, writtenOf(got), w)
	assert.Equal(t, created.GetUID(), w.UID)
	assert.Equal(t, "done", got.Object["status"].(map[string]any)["phase"])

	stale := []byte(`{"metadata":{"resourceVersion":"` + created.GetResourceVersion() + `","labels":{"x":"y"}}}`)
	_, err = pr.patchIdentity(ctx, widgetGVR, "", u.GetName(), stale)
	assert.True(t, apierrors.IsConflict(err), "a stale version: %v", err)
	_, err = pr.patchIdentity(ctx, widgetGVR, "", "no-such-widget", []byte(`{"metadata":{"labels":{"x":"y"}}}`))
	assert.True(t, apierrors.IsNotFound(err), "a missing object: %v", err)

	g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "test.o2ims.io/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "identity-gadget", "namespace": "default"}}}
	createdG, err := clients.Dynamic.Resource(gadgetGVR).Namespace("default").Create(ctx, g, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = clients.Dynamic.Resource(gadgetGVR).Namespace("default").Delete(context.Background(), g.GetName(), metav1.DeleteOptions{})
	})
	w, err = pr.patchIdentity(ctx, gadgetGVR, "default", g.GetName(), []byte(`{"metadata":{"labels":{"x":"y"}}}`))
	require.NoError(t, err)
	assert.Equal(t, createdG.GetUID(), w.UID)
	assert.NotEqual(t, createdG.GetResourceVersion(), w.ResourceVersion)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "identity-cm", Namespace: "default"}}
	createdCM, err := srv.AdminClientset().CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = srv.AdminClientset().CoreV1().ConfigMaps("default").Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})
	w, err = pr.patchIdentity(ctx, corev1.SchemeGroupVersion.WithResource("configmaps"), "default", cm.Name, []byte(`{"data":{"k":"v"}}`))
	require.NoError(t, err)
	gotCM, err := srv.AdminClientset().CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, written{gotCM.ResourceVersion, createdCM.UID}, w)
	assert.Equal(t, "v", gotCM.Data["k"])
}
