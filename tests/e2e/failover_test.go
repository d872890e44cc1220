package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// The operators' leader election timing (framework defaults): a Lease of 15 s, tried every 2 s.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
)

// Two replicas with --leader-elect as the manifests/ha component runs them: both ready and serving the NBI
// from their own caches, only one handling. SIGKILL the leader under NBI load spread over both (as a
// Service spreads connections): no read the survivor answers fails and its answers stay current, the
// reads the dead replica cannot answer are answered by the survivor when sent there, the survivor leads
// within the Lease's bound, handles what was created meanwhile, and no request is handled twice.
func TestLeaderKilledUnderNBILoadFailsNoReadOfTheSurvivorAndHandlesNothingTwice(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{"PROVISIONING_REQUEST_SELECTOR": privateLabel + "=failover", "REQUEUE_INTERVAL": "2"}
	args := []string{"--leader-elect", "--leader-elect-id=e2e-failover"}
	a, err := st.StartOperatorWith(ctx, env, args)
	require.NoError(t, err)
	defer func() { _ = a.Stop(5 * time.Second) }()
	b, err := st.StartOperatorWith(ctx, env, args)
	require.NoError(t, err)
	defer func() { _ = b.Stop(5 * time.Second) }()

	// The one not leading is ready: it serves reads (StartOperatorWith waited for its /readyz as well).
	var standby *stack.Operator
	eventually(t, 30*time.Second, func() bool {
		ma, errA := a.Scrape()
		mb, errB := b.Scrape()
		if errA != nil || errB != nil {
			return false
		}
		switch la, lb := ma.Sum("leader_election_master_status", nil), mb.Sum("leader_election_master_status", nil); {
		case la == 1 && lb == 0:
			standby = b
		case la == 0 && lb == 1:
			standby = a
		}
		return standby != nil
	}, "never exactly one leader")
	resp, err := http.Get(standby.HealthURL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a replica that does not lead is not ready")

	nbiWritesOnAStandby(t, standby)

	res, err := st.MeasureFailover(ctx, a, b, stack.FailoverOptions{
		Label: privateLabel, Value: "failover", Requests: 10, Readers: 4,
		Trickle: 500 * time.Millisecond, Before: 2 * time.Second, After: 3 * time.Second, LeaseDuration: leaseDuration,
	})
	t.Logf("failover: %+v", res)
	require.NoError(t, err)

	assert.Positive(t, res.SurvivorReads)
	assert.Zero(t, res.SurvivorFailed, "reads the survivor answered failed: %v", res.Failures)
	assert.Zero(t, res.LeaderFailed, "reads of the leader before the kill failed: %v", res.Failures)
	assert.Positive(t, res.DeadReads, "no read was sent to the killed replica: the test proves nothing about it")
	assert.Zero(t, res.DeadRetryFailed, "reads the killed replica left unanswered failed on the survivor too: %v", res.Failures)
	// client-go's election cannot take a Lease that was not released before it has gone unrenewed for the
	// Lease duration as the standby saw it: that is up to a jittered retry period after the holder's last
	// renewal (which came at or before the kill), and the standby tries once per jittered retry period.
	// client-go's jitter factor is 1.2 and wait.Jitter adds up to that many periods, so a jittered retry
	// period is at most 2.2 of them: kill → leading is at most LeaseDuration + 2 × 2.2 × RetryPeriod.
	assert.LessOrEqual(t, res.NewLeaderAfter, leaseDuration+time.Duration(4.4*float64(retryPeriod)), "no new leader in time")
	assert.Zero(t, res.StandbyRunsBeforeLead, "the standby handled while the other one led")
	assert.Positive(t, res.Created)
	assert.Equal(t, res.Total, res.Fulfilled, "not every request was handled after the failover")
	assert.Equal(t, res.Total, res.SurvivorCurrent, "the survivor's NBI does not answer every request as fulfilled")
	// One PackageVariant per request created meanwhile, none for the requests fulfilled before (a 409
	// is a create the chain settled by reading back the one that exists: logged above, not a second one).
	assert.Equal(t, float64(res.Created), res.PackageVariantPOSTs["201"], "PackageVariant creates: %v", res.PackageVariantPOSTs)
	assert.False(t, res.HandledTwice())
}

// nbiWritesOnAStandby: POST, PUT and DELETE through the NBI of a replica that does not lead act on the
// API server as on the leader's (the shared operator, not the pair, handles this request).
func nbiWritesOnAStandby(t *testing.T, standby *stack.Operator) {
	t.Helper()
	ctx := context.Background()
	request := map[string]any{
		"provisioningRequestId": "e2e-standby-writes", "name": "standby", "description": "written through a standby",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{"clusterName": "edge-e2e-standby"},
	}
	code, _, body := call(t, http.MethodPost, standby.NBIURL+nbiBase, request)
	require.Equal(t, http.StatusCreated, code, string(body))
	prs := st.API.AdminDynamic().Resource(schema.GroupVersionResource{Group: "o2ims.provisioning.oran.org", Version: "v1alpha1", Resource: "provisioningrequests"})
	eventually(t, 60*time.Second, func() bool {
		_, _, b := call(t, http.MethodGet, operator.NBIURL+nbiBase+"/e2e-standby-writes", nil)
		var got info
		_ = json.Unmarshal(b, &got)
		return got.Status.Phase == "FULFILLED"
	}, "the request posted through the standby was never fulfilled")

	request["description"] = "replaced through a standby"
	code, _, body = call(t, http.MethodPut, standby.NBIURL+nbiBase+"/e2e-standby-writes", request)
	require.Equal(t, http.StatusOK, code, string(body))
	u, err := prs.Get(ctx, "e2e-standby-writes", metav1.GetOptions{})
	require.NoError(t, err)
	desc, _, _ := unstructured.NestedString(u.Object, "spec", "description")
	assert.Equal(t, "replaced through a standby", desc)

	code, _, body = call(t, http.MethodDelete, standby.NBIURL+nbiBase+"/e2e-standby-writes", nil)
	require.Equal(t, http.StatusAccepted, code, string(body))
	eventually(t, 60*time.Second, func() bool {
		_, err := prs.Get(ctx, "e2e-standby-writes", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "the request deleted through the standby never went away")
}

// The ha component, stacked with nbi-auth and nbi-tls as production stacks them, renders with the real
// kubectl and the API server accepts it (server-side dry run): two leader-elected replicas rolled without
// a gap, spread over nodes, a PodDisruptionBudget evicting one at a time, and the NBI Service over both, listening on
// the pod network with authentication and TLS.
func TestHAComponentRunsTwoLeaderElectedReplicasBehindTheNBIService(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, kubeapi.WriteKustomization(dir, true, "nbi-auth", "nbi-tls", "ha"))
	rendered, err := st.KubectlRun(ctx, "kustomize", dir)
	require.NoError(t, err, rendered)
	objs := map[string]map[string]any{}
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		meta, _ := obj["metadata"].(map[string]any)
		objs[obj["kind"].(string)+"/"+meta["name"].(string)] = obj
	}
	dep := objs["Deployment/o2ims-operator"]
	require.NotNil(t, dep)
	replicas, _, _ := unstructured.NestedFieldNoCopy(dep, "spec", "replicas")
	assert.EqualValues(t, 2, replicas)
	strategy, _, _ := unstructured.NestedString(dep, "spec", "strategy", "type")
	assert.Equal(t, "RollingUpdate", strategy)
	podLabels, _, _ := unstructured.NestedStringMap(dep, "spec", "template", "metadata", "labels")
	containers, _, _ := unstructured.NestedSlice(dep, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	c := containers[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	assert.Contains(t, args, "--leader-elect")
	env := map[string]string{}
	envs, _, _ := unstructured.NestedSlice(c, "env")
	for _, e := range envs {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			env[m["name"].(string)] = v
		}
	}
	assert.Equal(t, "0.0.0.0", env["NBI_HOST"], "the Service cannot reach a loopback NBI")
	assert.Equal(t, "kubernetes", env["NBI_AUTH"], "an NBI on the pod network must authenticate")
	assert.NotEmpty(t, env["NBI_TLS_CERT_FILE"], "an NBI on the pod network must serve TLS")
	anti, _, _ := unstructured.NestedSlice(dep, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
	assert.NotEmpty(t, anti, "replicas not spread over nodes")

	svc := objs["Service/o2ims-operator-nbi"]
	require.NotNil(t, svc, "no NBI Service")
	sel, _, _ := unstructured.NestedStringMap(svc, "spec", "selector")
	for k, v := range sel {
		assert.Equal(t, v, podLabels[k], "the NBI Service selects other pods")
	}
	ports, _, _ := unstructured.NestedSlice(svc, "spec", "ports")
	require.Len(t, ports, 1)
	assert.Equal(t, "nbi", ports[0].(map[string]any)["targetPort"])

	pdb := objs["PodDisruptionBudget/o2ims-operator"]
	require.NotNil(t, pdb, "no PodDisruptionBudget")
	// One pod at a time, never all: maxUnavailable, which at one replica still lets a drain through.
	maxUnavail, _, _ := unstructured.NestedFieldNoCopy(pdb, "spec", "maxUnavailable")
	assert.EqualValues(t, 1, maxUnavail)
	_, hasMin, _ := unstructured.NestedFieldNoCopy(pdb, "spec", "minAvailable")
	assert.False(t, hasMin, "minAvailable blocks every drain at one replica")
	pdbSel, _, _ := unstructured.NestedStringMap(pdb, "spec", "selector", "matchLabels")
	for k, v := range pdbSel {
		assert.Equal(t, v, podLabels[k], "the PodDisruptionBudget selects other pods")
	}

	out, err := st.KubectlRun(ctx, "apply", "--dry-run=server", "-k", dir)
	require.NoError(t, err, "the API server refuses the ha component:\n%s", out)
}
