package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

const nbiBase = "/O2ims_infrastructureProvisioning/v1/provisioningRequests"

// operatorCtl keeps one operator process running across kills, restarting it as the kubelet would.
type operatorCtl struct {
	st   *stack.Stack
	env  map[string]string
	logf func(format string, args ...any)

	mu            sync.Mutex
	op            *stack.Operator
	starts        int
	startFailures int
	failReasons   []string // the last line of each refused start
	kills         int
	selfExits     []string // the operator ended without being killed: never expected
}

func (c *operatorCtl) start(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		op, err := c.st.StartOperator(ctx, c.env)
		if err == nil {
			c.mu.Lock()
			c.op = op
			c.starts++
			c.mu.Unlock()
			return nil
		}
		lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
		c.mu.Lock()
		c.startFailures++
		c.failReasons = append(c.failReasons, strings.TrimSpace(lines[len(lines)-1]))
		c.mu.Unlock()
		c.logf("operator start attempt %d failed (started again, as the kubelet would): %s", attempt, lines[len(lines)-1])
		if attempt >= 8 || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Second)
	}
}

// kill SIGKILLs the running operator; it notes an operator that had already exited on its own.
func (c *operatorCtl) kill() {
	c.mu.Lock()
	op := c.op
	c.op = nil
	c.mu.Unlock()
	if op == nil {
		return
	}
	c.checkAlive(op)
	op.Kill()
	c.mu.Lock()
	c.kills++
	c.mu.Unlock()
}

func (c *operatorCtl) checkAlive(op *stack.Operator) bool {
	select {
	case <-op.Done():
		c.mu.Lock()
		c.selfExits = append(c.selfExits, fmt.Sprintf("pid %d exited by itself: %v", op.Pid(), op.Err()))
		c.mu.Unlock()
		return false
	default:
		return true
	}
}

// ensure restarts the operator when it is not running (after an exit of its own).
func (c *operatorCtl) ensure(ctx context.Context) error {
	c.mu.Lock()
	op := c.op
	c.mu.Unlock()
	if op != nil && c.checkAlive(op) {
		return nil
	}
	c.mu.Lock()
	c.op = nil
	c.mu.Unlock()
	return c.start(ctx)
}

// nbi is the running operator's NBI base URL, "" while it is down.
func (c *operatorCtl) nbi() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.op == nil {
		return ""
	}
	return c.op.NBIURL + nbiBase
}

func (c *operatorCtl) stats() (starts int, failReasons, selfExits []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts, append([]string(nil), c.failReasons...), append([]string(nil), c.selfExits...)
}

// hostAsk is one entry of templateParameters.hosts.
type hostAsk struct {
	Role  string
	Count int
	Cores int
}

// plannedRequest is one ProvisioningRequest of the run.
type plannedRequest struct {
	Name   string
	ViaNBI bool
	Broken bool // its template's Cluster fails: it must end failed (after claiming its hosts)
	Hosts  []hostAsk
	UID    string
}

func (p plannedRequest) hostCount() int {
	n := 0
	for _, h := range p.Hosts {
		n += h.Count
	}
	return n
}

const (
	goodTemplate   = "nephio-workload-cluster"
	brokenTemplate = "chaos-broken-template"
)

// planRequests draws n requests: some without hosts, some with one or two, two with a template whose
// Cluster fails; the hosts asked for never exceed the pool (free32 hosts with 32 cores, free16 with 16),
// so every request can be fulfilled and a host that leaks shows as a request that never is.
func planRequests(rng *rand.Rand, n, free32, free16 int) []plannedRequest {
	var out []plannedRequest
	for i := 0; i < n; i++ {
		p := plannedRequest{Name: fmt.Sprintf("chaos-%02d", i+1), ViaNBI: i%2 == 0}
		kind := rng.Intn(100)
		switch {
		case i < 2: // two broken requests with one host each: failed requests must release too
			p.Broken = true
			kind = 50
		case kind < 25:
			kind = -1 // no hosts
		}
		if kind >= 0 {
			var options [][]hostAsk
			if free32 >= 1 {
				options = append(options, []hostAsk{{"control-plane", 1, 32}})
			}
			if free16 >= 1 {
				options = append(options, []hostAsk{{"worker", 1, 16}})
			}
			if !p.Broken && free32 >= 1 && free16 >= 1 {
				options = append(options, []hostAsk{{"control-plane", 1, 32}, {"worker", 1, 16}})
			}
			if !p.Broken && free16 >= 2 {
				options = append(options, []hostAsk{{"worker", 2, 16}})
			}
			if len(options) > 0 {
				p.Hosts = options[rng.Intn(len(options))]
				for _, h := range p.Hosts {
					if h.Cores == 32 {
						free32 -= h.Count
					} else {
						free16 -= h.Count
					}
				}
			}
		}
		out = append(out, p)
	}
	return out
}

func (p plannedRequest) templateParameters() map[string]any {
	params := map[string]any{"clusterName": "edge-" + p.Name, "labels": map[string]any{"chaos": "true"}}
	if len(p.Hosts) > 0 {
		var hs []any
		for _, h := range p.Hosts {
			hs = append(hs, map[string]any{"role": h.Role, "count": h.Count, "selector": map[string]any{"cpu_cores": h.Cores}})
		}
		params["hosts"] = hs
	}
	return params
}

func (p plannedRequest) template() string {
	if p.Broken {
		return brokenTemplate
	}
	return goodTemplate
}

// create submits the request through the NBI or the API server, retrying through kills and API-server
// restarts (a lost answer to a create that landed shows as "already exists" next time), and returns its uid.
func (h *harness) create(ctx context.Context, p plannedRequest) (string, error) {
	dyn := h.st.API.AdminDynamic().Resource(v1alpha1.GVR)
	deadline := time.Now().Add(2 * time.Minute)
	for attempt := 0; ; attempt++ {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("creating %s: gave up after %d attempts", p.Name, attempt)
		}
		if attempt > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		if p.ViaNBI {
			url := h.ops.nbi()
			if url == "" {
				continue
			}
			code, body, err := call(ctx, http.MethodPost, url, map[string]any{
				"provisioningRequestId": p.Name, "name": "chaos " + p.Name, "description": "chaos test",
				"templateName": p.template(), "templateVersion": "v3.0.0", "templateParameters": p.templateParameters(),
			})
			if err != nil || code >= 500 {
				continue // killed, or the API server is away: ask again
			}
			if code != http.StatusCreated && code != http.StatusConflict {
				return "", fmt.Errorf("NBI POST %s answered %d: %s", p.Name, code, body)
			}
		} else {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "o2ims.provisioning.oran.org/v1alpha1", "kind": "ProvisioningRequest",
				"metadata": map[string]any{"name": p.Name},
				"spec": map[string]any{
					"name": "chaos " + p.Name, "description": "chaos test",
					"templateName": p.template(), "templateVersion": "v3.0.0", "templateParameters": p.templateParameters(),
				},
			}}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := dyn.Create(cctx, u, metav1.CreateOptions{})
			cancel()
			if err != nil && !apierrors.IsAlreadyExists(err) {
				continue
			}
		}
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := dyn.Get(gctx, p.Name, metav1.GetOptions{})
		cancel()
		if err != nil {
			continue
		}
		return string(got.GetUID()), nil
	}
}

// remove deletes the request through the NBI or the API server, retrying until the deletion is asked.
func (h *harness) remove(ctx context.Context, p plannedRequest) error {
	dyn := h.st.API.AdminDynamic().Resource(v1alpha1.GVR)
	deadline := time.Now().Add(2 * time.Minute)
	for attempt := 0; ; attempt++ {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("deleting %s: gave up after %d attempts", p.Name, attempt)
		}
		if attempt > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		if p.ViaNBI {
			url := h.ops.nbi()
			if url == "" {
				continue
			}
			code, body, err := call(ctx, http.MethodDelete, url+"/"+p.Name, nil)
			switch {
			case err != nil || code >= 500:
				continue
			case code == http.StatusAccepted || code == http.StatusNotFound:
				return nil
			default:
				return fmt.Errorf("NBI DELETE %s answered %d: %s", p.Name, code, body)
			}
		}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := dyn.Delete(dctx, p.Name, metav1.DeleteOptions{})
		cancel()
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
	}
}

func call(ctx context.Context, method, url string, body any) (int, string, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", err
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// requestStates lists the requests' provisioning states by name (absent ones are missing).
func (h *harness) requestStates(ctx context.Context) (map[string]string, map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := h.st.API.AdminDynamic().Resource(v1alpha1.GVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	states, messages := map[string]string{}, map[string]string{}
	for _, u := range list.Items {
		s, _, _ := unstructured.NestedString(u.Object, "status", "provisioningStatus", "provisioningState")
		m, _, _ := unstructured.NestedString(u.Object, "status", "provisioningStatus", "provisioningMessage")
		if u.GetDeletionTimestamp() != nil && s != "deleting" {
			s = "deleting (" + s + ")"
		}
		states[u.GetName()], messages[u.GetName()] = s, m
	}
	return states, messages, nil
}
