// Command localrun is `make run-local`: the whole system on this machine — a real kube-apiserver with the
// shipped manifests, the NetBox simulator, simulated Porch/CAPI/Metal3, and the operator binary as its
// ServiceAccount — then a sample request submitted through the northbound API, followed to FULFILLED.
// It keeps running for kubectl and curl until Ctrl-C, and leaves nothing behind. With --until-fulfilled
// (make run-local ARGS=--until-fulfilled) it stops everything once the request is FULFILLED and exits 0,
// or exits 1 with the reason: the non-interactive proof CI runs from a bare clone. With --oauth the NBI
// takes OAuth 2.0 access tokens (NBI_AUTH=oauth) of a real ORY Hydra, and every call here carries one.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

const (
	nbiBase = "/O2ims_infrastructureProvisioning/v1/provisioningRequests"
	invBase = "/o2ims-infrastructureInventory/v1"
)

func main() {
	operator := flag.String("operator", "bin/o2ims-operator", "the operator binary (make build)")
	dir := flag.String("dir", ".cache/localrun", "state, logs and kubeconfigs (wiped at start)")
	hosts := flag.Int("hosts", 6, "free bare-metal hosts seeded in the NetBox simulator")
	untilFulfilled := flag.Bool("until-fulfilled", false, "stop everything and exit 0 once the sample request is FULFILLED")
	oauth := flag.Bool("oauth", false, "NBI_AUTH=oauth: start ORY Hydra ($O2IMS_HYDRA), call the NBI with its client-credentials token")
	timeout := flag.Duration("timeout", 15*time.Minute, "with --until-fulfilled: give up (exit 1) after this long")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *untilFulfilled {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, *timeout, fmt.Errorf("not FULFILLED within --timeout=%s", *timeout))
		defer cancel()
	}
	err := run(ctx, *operator, *dir, *hosts, *untilFulfilled, *oauth)
	if err == nil && *untilFulfilled && ctx.Err() != nil {
		err = context.Cause(ctx) // interrupted or timed out after all: never a silent success
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && errors.Is(err, ctx.Err()) {
			err = cause
		}
		fmt.Fprintln(os.Stderr, "run-local:", err)
		stop()
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run(ctx context.Context, operator, dir string, hosts int, untilFulfilled, oauth bool) (err error) {
	start := time.Now()
	if v := os.Getenv("O2IMS_RUN_LOCAL_START"); v != "" {
		if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
			start = time.Unix(0, ns)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	_ = os.RemoveAll(abs) // a fresh cluster every run
	st, err := stack.Start(ctx, stack.Options{
		Operator: operator, Dir: abs, Progress: progress{}, Hosts: hosts,
		World: world.Options{
			RenderDelay: 2 * time.Second, ProvisionDelay: 4 * time.Second, PorchFinalizer: true, DeleteDelay: time.Second,
			RegisterDelay: time.Second, InspectDelay: 2 * time.Second, Metal3Finalizer: true,
		},
	})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the operator, the simulators and the API server")
		if stopErr := st.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping: %w", stopErr))
			return
		}
		say("stopped; nothing is left running")
	}()

	var env map[string]string
	var oa *oauthRun
	if oauth {
		if oa, env, err = startOAuth(ctx, st, abs); err != nil {
			return err
		}
		defer oa.hydra.Stop()
	}
	say("starting the operator (%s) as system:serviceaccount:%s:%s with only the shipped RBAC", operator, stack.OperatorNamespace, stack.ServiceAccount)
	op, err := st.StartOperator(ctx, env)
	if err != nil {
		return err
	}
	say("operator ready: northbound API %s, health/metrics %s, log %s", op.NBIURL, op.HealthURL, op.Log)

	request := map[string]any{
		"provisioningRequestId": "edge-cluster-01",
		"name":                  "Edge cluster 01",
		"description":           "A workload cluster on three bare-metal hosts from NetBox",
		"templateName":          "nephio-workload-cluster",
		"templateVersion":       "v3.0.0",
		"templateParameters": map[string]any{
			"clusterName": "edge-01",
			"labels":      map[string]any{"nephio.org/site-type": "edge", "nephio.org/region": "eu-west"},
			"hosts": []any{
				map[string]any{"role": "control-plane", "count": 1, "selector": map[string]any{"cpu_cores": 32}},
				map[string]any{"role": "worker", "count": 2, "selector": map[string]any{"cpu_cores": 16}},
			},
		},
	}
	// A small SMO receiving inventory notifications: each claim of a host arrives as one.
	recv := smo.New()
	defer recv.Close()
	recv.OnNotify(func(n smo.Notification) {
		post, _ := n.Body["postObjectState"].(map[string]any)
		ext, _ := post["extensions"].(map[string]any)
		event := map[float64]string{0: "created", 1: "modified", 2: "deleted"}[n.Body["notificationEventType"].(float64)]
		fmt.Printf("    [%6.1fs] SMO notified: %v %v %s (host %v now %v)\n", time.Since(start).Seconds(),
			n.Body["objectType"], post["resourceId"], event, ext["hostIdentity"], ext["status"])
	})
	sub, _ := json.Marshal(map[string]any{"callback": recv.URL(), "filter": "(eq,objectType,resource)"})
	say("subscribing an SMO to inventory changes:\n    curl -X POST%s %s%s -H 'Content-Type: application/json' -d '%s'", curlAuth(), op.NBIURL, invBase+"/subscriptions", sub)
	if code, answer, err := call(ctx, http.MethodPost, op.NBIURL+invBase+"/subscriptions", sub); err != nil || code != http.StatusCreated {
		return fmt.Errorf("subscribing answered %d %v: %s", code, err, answer)
	}

	body, _ := json.MarshalIndent(request, "", "  ")
	say("submitting a ProvisioningRequest through the northbound API:\n    curl -X POST%s %s%s -H 'Content-Type: application/json' -d @request.json", curlAuth(), op.NBIURL, nbiBase)
	code, answer, err := call(ctx, http.MethodPost, op.NBIURL+nbiBase, body)
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("POST answered %d: %s", code, answer)
	}
	var info struct {
		Reference string `json:"provisioningRequestReference"`
	}
	_ = json.Unmarshal(answer, &info)
	say("201 Created (provisioningRequestReference %s); following it:", info.Reference)

	if err := follow(ctx, op, start); err != nil {
		return err
	}
	for wait := time.Now(); len(recv.Notifications()) == 0 && time.Since(wait) < 10*time.Second; {
		time.Sleep(100 * time.Millisecond)
	}
	say("the SMO received %d inventory notifications", len(recv.Notifications()))
	if untilFulfilled {
		return nil // the deferred Stop ends everything and says so
	}
	howTo(st, op, oa)
	select {
	case <-ctx.Done():
		fmt.Println()
	case <-op.Done():
		return fmt.Errorf("the operator exited: %v (log: %s)", op.Err(), op.Log)
	}
	return nil
}

// follow polls the request through the NBI and prints every change of phase or message until FULFILLED.
func follow(ctx context.Context, op *stack.Operator, start time.Time) error {
	last := ""
	for {
		code, answer, err := call(ctx, http.MethodGet, op.NBIURL+nbiBase+"/edge-cluster-01", nil)
		if err != nil {
			return err
		}
		if code == http.StatusOK {
			var info struct {
				Status struct {
					Phase   string `json:"provisioningPhase"`
					Message string `json:"message"`
				} `json:"status"`
				Set struct {
					Cluster string   `json:"nodeClusterId"`
					Infra   []string `json:"infrastructureResourceIds"`
				} `json:"provisionedResourceSet"`
			}
			_ = json.Unmarshal(answer, &info)
			line := fmt.Sprintf("%-12s %s", info.Status.Phase, info.Status.Message)
			if line != last {
				fmt.Printf("    [%6.1fs] %s\n", time.Since(start).Seconds(), line)
				last = line
			}
			switch info.Status.Phase {
			case "FULFILLED":
				say("FULFILLED %.1fs after `make run-local` started: node cluster %s on hosts %s",
					time.Since(start).Seconds(), info.Set.Cluster, strings.Join(info.Set.Infra, ", "))
				return nil
			case "FAILED":
				return fmt.Errorf("the request failed: %s (log: %s)", info.Status.Message, op.Log)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-op.Done():
			return fmt.Errorf("the operator exited: %v (log: %s)", op.Err(), op.Log)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func howTo(st *stack.Stack, op *stack.Operator, oa *oauthRun) {
	kubectlDir := filepath.Dir(st.Kubectl)
	fmt.Printf(`
It keeps running; Ctrl-C stops everything.
`)
	if oa != nil {
		fmt.Printf(`
  OAuth 2.0 (NBI_AUTH=oauth): a token from ORY Hydra (%s, log %s), then every NBI curl below carries it:
    %s
`, oa.hydra.Public, filepath.Join(st.Dir, "hydra.log"), oa.tokenCurl())
	}
	fmt.Print(withAuth(fmt.Sprintf(`
  kubectl (the real one, built for the API server):
    export KUBECONFIG=%s PATH=%s:$PATH
    kubectl get provisioningrequests
    kubectl get provisioningrequests -o wide
    kubectl get packagevariants,clusters -n default
    kubectl get baremetalhosts -n %s
    kubectl describe provisioningrequest edge-cluster-01
    kubectl delete provisioningrequest edge-cluster-01     # releases the hosts, removes the package variant

  northbound API (O2IMS provisioning):
    curl -s %s%s | jq
    curl -s '%s%s?filter=(eq,status/provisioningPhase,FULFILLED)&fields=provisioningRequestData/templateParameters' | jq
    curl -s -X DELETE -i %s%s/edge-cluster-01

  operator:
    curl -s %s/healthz; curl -s %s/readyz; curl -s %s/metrics | grep ^o2ims_
    log: %s

  NetBox simulator:
    curl -s -H 'Authorization: Token %s' '%s/api/dcim/devices/?status=active' | jq '.results[] | {id, name, custom_fields}'
`, st.AdminKubeconfig, kubectlDir, stack.Metal3Namespace,
		op.NBIURL, nbiBase, op.NBIURL, nbiBase, op.NBIURL, nbiBase,
		op.HealthURL, op.HealthURL, op.HealthURL, op.Log,
		st.NetBoxToken(), st.NetBoxURL), op.NBIURL))
	inv := op.NBIURL + invBase
	fmt.Print(withAuth(fmt.Sprintf(`
  northbound API (O2IMS inventory):
    curl -s %[1]s | jq                                # the O-Cloud
    curl -s %[1]s/resourcePools | jq                  # NetBox sites holding pool hosts
    curl -s %[1]s/resourcePools/$(curl -s %[1]s/resourcePools | jq -r '.[0].resourcePoolId')/resources | jq
    curl -s %[1]s/resourceTypes | jq
    curl -s %[1]s/deploymentManagers | jq             # the Cluster of the fulfilled request
    curl -s %[1]s/subscriptions | jq
`, inv), op.NBIURL))
}

func call(ctx context.Context, method, url string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

type progress struct{}

func (progress) Write(p []byte) (int, error) {
	fmt.Print("==> " + string(p))
	return len(p), nil
}
