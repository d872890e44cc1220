package framework

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// fakeAPI answers any GET with an object of the kind its path names (enough for the clients to decode).
func fakeAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiVersion, kind := "example.com/v1", "Thing"
		switch {
		case strings.Contains(r.URL.Path, "/leases/"):
			apiVersion, kind = "coordination.k8s.io/v1", "Lease"
		case strings.Contains(r.URL.Path, "/events/"):
			apiVersion, kind = "v1", "Event"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": "x", "namespace": "ns"}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Each resource has its own bucket: with a burst of one and a refill of one token in 1 000 s, a second
// call of one resource cannot get a token before its deadline, while the first call of another
// resource, of a subresource's sibling, of the Lease and of the typed client still go through. (With
// client-go's one bucket per client, the first exhausted call would have held back all of them.)
func TestEveryResourceHasItsOwnClientSideRateLimit(t *testing.T) {
	srv := fakeAPI(t)
	clients, err := NewClients(&rest.Config{Host: srv.URL}, ClientOptions{QPS: 0.001, Burst: 1, Timeout: 5 * time.Second})
	require.NoError(t, err)
	things := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	others := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "others"}
	get := func(gvr schema.GroupVersionResource, sub ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := clients.Dynamic.Resource(gvr).Namespace("ns").Get(ctx, "x", metav1.GetOptions{}, sub...)
		return err
	}
	require.NoError(t, get(things))
	err = get(things, "status")
	require.Error(t, err, "the status subresource shares its resource's bucket")
	require.Contains(t, err.Error(), "rate limiter")
	require.NoError(t, get(others), "another resource waited for the first one's bucket")
	require.Error(t, get(others))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = clients.Kubernetes.CoreV1().Events("ns").Get(ctx, "x", metav1.GetOptions{})
	require.NoError(t, err, "the typed client waited for the dynamic client's buckets")
	_, err = clients.Kubernetes.CoreV1().Events("ns").Get(ctx, "x", metav1.GetOptions{})
	require.Error(t, err)
	_, err = clients.leaseClient().CoordinationV1().Leases("ns").Get(ctx, "x", metav1.GetOptions{})
	require.NoError(t, err, "the Lease renewal waited behind the Events")
}

// A limit of zero or less is no client-side limit at all (not client-go's default of 5 per second).
func TestNoClientSideLimitWhenQPSIsNotPositive(t *testing.T) {
	srv := fakeAPI(t)
	clients, err := NewClients(&rest.Config{Host: srv.URL}, ClientOptions{QPS: 0, Burst: 0, Timeout: 5 * time.Second})
	require.NoError(t, err)
	things := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// client-go's default bucket (5/s, burst 10) would make every call after the tenth wait 200 ms, longer
	// than each call's deadline: its limiter then fails the call at once ("would exceed context deadline"),
	// so a limit shows as that error, whatever the machine's speed.
	for i := range 40 {
		cctx, ccancel := context.WithTimeout(ctx, 150*time.Millisecond)
		_, err := clients.Dynamic.Resource(things).Namespace("ns").Get(cctx, "x", metav1.GetOptions{})
		ccancel()
		if err != nil {
			require.NotContains(t, err.Error(), "rate limiter", "call %d", i)
		}
	}
}
