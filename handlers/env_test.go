package handlers

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	nbinventory "github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
)

// Templates that make the simulated world misbehave.
const (
	tmplOK             = "edge-cluster"
	tmplRenderFails    = "tmpl-render-fails"
	tmplNeverRenders   = "tmpl-never-renders"
	tmplNeverProvision = "tmpl-never-provisions"
	tmplClusterFails   = "tmpl-cluster-fails"
	tmplReadyFirst     = "tmpl-ready-first"
	// Porch renders a change of it into a draft that nobody approves (Nephio's policy initial publishes
	// only a package's first revision, and no administrator comes).
	tmplNeverPublished = "tmpl-never-published"
	// Fulfilled, then Porch reports Ready=False (tmplPorchDegrades) or CAPI Available=False
	// (tmplClusterDegrades) and keeps doing so.
	tmplPorchDegrades   = "tmpl-porch-degrades"
	tmplClusterDegrades = "tmpl-cluster-degrades"
	// Its published revisions are applied by the GitOps sync syncDelay after their publication (Config
	// Sync's poll): Porch reports a change published while the Cluster is still the old, settled one.
	tmplSlowSync = "tmpl-slow-sync"
	syncDelay    = 3 * time.Second
	// Its versions all render the same Cluster spec (a bump changes only the package's other objects), and
	// the GitOps sync applies them syncDelay after publication: no apply ever moves the Cluster's generation.
	tmplSameCluster = "tmpl-same-cluster"
	// Its revisions render no Cluster at all.
	tmplNoCluster = "tmpl-no-cluster"
	// degradeAfter is when those faults start: after the request was fulfilled.
	degradeAfter = 10 * time.Second
)

var worldOptions = world.Options{
	RenderDelay: 200 * time.Millisecond, ProvisionDelay: 400 * time.Millisecond,
	PorchFinalizer: true, DeleteDelay: 200 * time.Millisecond,
	RegisterDelay: 100 * time.Millisecond, InspectDelay: 100 * time.Millisecond, Metal3Finalizer: true,
	ImageDelay:         100 * time.Millisecond,
	BadCredentialsUser: "refused",
	RenderFailure:      map[string]string{tmplRenderFails: "could not find upstream package revision"},
	NeverRender:        map[string]bool{tmplNeverRenders: true},
	ReadyFirst:         map[string]bool{tmplReadyFirst: true, tmplRenderFails: true},
	NeverProvision:     map[string]bool{tmplNeverProvision: true},
	ClusterFailure:     map[string]string{tmplClusterFails: "invalid machine template"},
	// Day-2 drafts are published by an administrator, except a never-published template's.
	AdminApproves: true, NeverPublish: map[string]bool{tmplNeverPublished: true},
	ApproveDelay: 100 * time.Millisecond, RolloutDelay: 1500 * time.Millisecond,
	PorchDegradesAfter:   map[string]time.Duration{tmplPorchDegrades: degradeAfter},
	ClusterDegradesAfter: map[string]time.Duration{tmplClusterDegrades: degradeAfter},
	SyncDelay:            map[string]time.Duration{tmplSlowSync: syncDelay, tmplSameCluster: syncDelay},
	SameClusterSpec:      map[string]bool{tmplSameCluster: true},
	NoCluster:            map[string]bool{tmplNoCluster: true},
}

func TestMain(m *testing.M) {
	os.Exit(checkEveryMessageReached(kubeapi.RunMain(m, kubeapi.DefaultCRDs, func(s *kubeapi.Server) (func(), error) {
		for _, ns := range []string{"metal3", "o2ims-bmc-credentials"} {
			if err := s.EnsureNamespace(context.Background(), ns); err != nil {
				return nil, err
			}
		}
		// CAPM3's Metal3Machines: a host a Machine consumes names one (consumed_test.go).
		m3m, err := kubeapi.ReferenceCRD(kubeapi.Metal3MachineCRD)
		if err != nil {
			return nil, err
		}
		if err := s.InstallCRDs(context.Background(), m3m); err != nil {
			return nil, err
		}
		opts := worldOptions
		opts.Dynamic = s.AdminDynamic()
		w, err := world.Start(context.Background(), opts)
		if err != nil {
			return nil, err
		}
		testWorld = w
		return w.Stop, nil
	})))
}

// testWorld is the simulated world every test shares: its BMC faults are keyed by BMC address, and tests
// hand hosts to Machines with it.
var testWorld *world.World

type chain struct {
	op     *framework.Operator
	rec    *kubeapi.Recorder
	cfg    Config
	trail  *statusTrail      // every status the operator wrote for its requests (messages_test.go)
	view   *nbinventory.View // hosts are chosen from it; the inventory API would serve it (nil without NetBox)
	cancel context.CancelFunc
	done   chan error
}

// startChain runs the operator in-process on the shared server, watching requests labelled test=<label>.
// With an inventory client, the NetBox + Metal3 step is on.
func startChain(t *testing.T, srv *kubeapi.Server, label string, mutate func(*Config), rec *kubeapi.Recorder, inventory ...*netbox.Client) *chain {
	t.Helper()
	if rec == nil {
		rec = &kubeapi.Recorder{}
	}
	cfg, err := ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	cfg.Requeue = time.Minute // related watches must do the waking; the safety net is far away
	cfg.Selector = "test=" + label
	if mutate != nil {
		mutate(&cfg)
	}
	rc := srv.AdminConfig()
	rc.WrapTransport = rec.Wrap
	clients, err := framework.NewClients(rc, framework.DefaultClientOptions())
	require.NoError(t, err)
	version, err := DetectClusterVersion(clients.Kubernetes.Discovery(), cfg.ClusterAPIVersion)
	require.NoError(t, err)
	log := zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	op, err := framework.New(clients, framework.Options{
		Name: "o2ims-operator", MetricsNamespace: "o2ims", Prefix: Prefix, Logger: log,
		BackoffBase: 50 * time.Millisecond, KeepSyncGarbage: true, // many operators share this process
	})
	require.NoError(t, err)
	var hostStep Hosts
	var view *nbinventory.View
	if len(inventory) > 0 {
		// Hosts are chosen from the inventory's view, as in the binary; refreshed often, so an
		// administrator's change in the simulator shows within a test's patience.
		view = nbinventory.NewView(nbinventory.Config{OCloudID: testOCloud, RefreshInterval: 200 * time.Millisecond,
			ResyncInterval: 5 * time.Second}, nil)
		inventory[0].Claims.ObserveWrites(view.Written)
		r, err := nbinventory.NewRefresher(view, inventory[0].Search, log.Named("inventory"), op.Registry())
		require.NoError(t, err)
		op.Add(r)
		hostStep = hosts.New(HostsConfig(cfg, testOCloud), inventory[0], view, clients, op.Cache(), op.Registry())
	}
	h := New(cfg, version, clients, hostStep, op.Registry())
	h.Register(op)
	c := &chain{op: op, rec: rec, cfg: cfg, trail: trailFor(t, srv, cfg.Selector), view: view}
	c.start(t)
	return c
}

func (c *chain) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan error, 1)
	go func() { c.done <- c.op.Run(ctx) }()
	eventually(t, 30*time.Second, c.op.Ready, "operator never ready")
	t.Cleanup(func() { c.stop(t) })
}

func (c *chain) stop(t *testing.T) {
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.cancel = nil
	select {
	case err := <-c.done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("operator did not stop")
	}
}

// The test helpers every package shares (tests/kubeapi), under this package's short names.
var (
	eventually = kubeapi.Eventually
	hasEvent   = kubeapi.HasEvent
)

func provisioningRequest(name, label, template string, params map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "o2ims.provisioning.oran.org/v1alpha1", "kind": "ProvisioningRequest",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"test": label}},
		"spec": map[string]any{
			"name": "edge " + name, "description": "test request",
			"templateName": template, "templateVersion": "v1.0.0", "templateParameters": params,
		},
	}}
	return u
}

func createPR(t *testing.T, srv *kubeapi.Server, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := srv.AdminDynamic().Resource(v1alpha1.GVR).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	return out
}

func getPR(t *testing.T, srv *kubeapi.Server, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u, err := srv.AdminDynamic().Resource(v1alpha1.GVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	return u, true
}

// waitState waits until the request reaches a provisioning state and returns it.
// waitHandled waits until the request's handling is recorded: the closing write (the diff-base, the
// finalizer riding along) follows the fulfilled status in the same pass, and a request deleted before it
// lands goes at once, without a release (it holds nothing the garbage collector would not remove).
func waitHandled(t *testing.T, srv *kubeapi.Server, name string) {
	t.Helper()
	eventually(t, 30*time.Second, func() bool {
		u, ok := getPR(t, srv, name)
		return ok && slices.Contains(u.GetFinalizers(), Finalizer)
	}, "request %s: its handling was never recorded (no finalizer)", name)
}

func waitState(t *testing.T, srv *kubeapi.Server, name, state string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var last v1alpha1.ProvisioningStatus
	var u *unstructured.Unstructured
	eventually(t, timeout, func() bool {
		var ok bool
		u, ok = getPR(t, srv, name)
		if !ok {
			return false
		}
		last = v1alpha1.StatusOf(u)
		return last.State == state
	}, "request %s never reached %s; last status %+v", name, state, &last)
	return u
}

func getPV(t *testing.T, srv *kubeapi.Server, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u, err := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	return u, true
}

func eventsOf(t *testing.T, srv *kubeapi.Server, name string) []corev1.Event {
	t.Helper()
	return srv.Events(t, "default", name, v1alpha1.Kind)
}
