package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/o2ims-operator/o2ims-operator/nbi/alarmsapi"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// Test thresholds: the shipped expressions unchanged, every `for` at 0s (ForAllZero), and the operator
// run with a short CREATION_TIMEOUT, so the stuck-request alert (half of CREATION_TIMEOUT) fires after
// 15 s and the request fails after 30 s. Prometheus scrapes and evaluates every second.
const (
	testCreationTimeout = 30 * time.Second
	neverRenders        = "tmpl-never-renders"
	nbiBase             = "/O2ims_infrastructureProvisioning/v1/provisioningRequests"
)

// A real Prometheus (Debian's package) on loopback scrapes the operator binary with the shipped rules:
// every rule evaluates without error; nothing fires on a healthy system; a request whose PackageVariant
// never renders fires O2IMSProvisioningRequestStuck and then, when its budget runs out,
// O2IMSProvisioningRequestsFailing; a NetBox device with bad BMC credentials is quarantined and fires
// O2IMSHostQuarantined (and O2IMSHostPoolExhausted: its request has no other host); the operator gone
// fires O2IMSOperatorAbsent.
func TestRealPrometheusFiresTheShippedAlerts(t *testing.T) {
	promBin := Tool(t, "prometheus")
	start := time.Now()
	ctx := context.Background()
	dir := t.TempDir()
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	binary := filepath.Join(dir, "o2ims-operator")
	build := exec.Command(filepath.Join(root, "hack", "build.sh"), binary, "alerting")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the operator:\n%s", out)

	st, err := stack.Start(ctx, stack.Options{
		Operator: binary, Dir: filepath.Join(dir, "stack"), Hosts: 2,
		World: world.Options{RenderDelay: 100 * time.Millisecond, ProvisionDelay: 200 * time.Millisecond,
			RegisterDelay: 100 * time.Millisecond, InspectDelay: 100 * time.Millisecond,
			NeverRender: map[string]bool{neverRenders: true}},
		Env: map[string]string{"REQUEUE_INTERVAL": "1", "CREATION_TIMEOUT": fmt.Sprint(int(testCreationTimeout.Seconds()))},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Stop() })
	// A device only one request's selector matches, whose BMC credentials Secret has no password: claiming
	// it quarantines it (credentials-invalid).
	bad := st.NetBox.AddDevice(netboxsim.Device{Name: "server-bad-bmc", Status: "staged", Site: "edge-lab", Custom: map[string]any{
		"o2ims_managed": true, "o2ims_bmc_address": "redfish-virtualmedia+https://10.20.0.99/redfish/v1/Systems/1",
		"o2ims_boot_mac": "52:54:00:bb:00:01", "cpu_cores": 8, "rack": "r-bad",
	}})
	_, err = st.API.AdminClientset().CoreV1().Secrets(stack.CredentialsNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bmc-server-bad",
			Labels: map[string]string{fmt.Sprintf("o2ims.provisioning.oran.org/netbox-device-%d", bad): "true"}},
		Data: map[string][]byte{"username": []byte("admin"), "password": nil},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	op, err := st.StartOperator(ctx, nil)
	require.NoError(t, err)

	// Debian's Alertmanager with the shipped route and receiver (its webhook pointed at this operator's
	// NBI, plain HTTP on loopback without authentication here), where it is installed.
	var am string
	if amBin := LookupAlertmanager(t); amBin != "" {
		tokenFile := filepath.Join(dir, "am-token")
		require.NoError(t, os.WriteFile(tokenFile, []byte("unused-without-NBI_AUTH"), 0o600))
		am = StartAlertmanager(t, amBin, ShippedAlertmanagerConfig(t, op.NBIURL, alarmsapi.AlertmanagerPath, tokenFile, ""))
	} else {
		t.Log(alertmanagerAbsent + ": the Alertmanager half of this test is skipped")
	}
	prom := startPrometheus(t, promBin, dir, strings.TrimPrefix(op.HealthURL, "http://"), strings.TrimPrefix(am, "http://"))
	t.Logf("stack, operator and Prometheus up after %s", time.Since(start).Round(time.Millisecond))

	// Every rule evaluates cleanly against the real series, and nothing fires on a healthy system.
	waitFor(t, 60*time.Second, "the target scraped and every rule evaluated without error", func() (bool, string) {
		if v, ok := prom.scalar(t, `up{job="o2ims-operator"}`); !ok || v != 1 {
			return false, "target not up"
		}
		return prom.rulesHealthy(t)
	})
	time.Sleep(3 * time.Second) // a few evaluations
	assert.Empty(t, prom.firing(t), "alerts firing on a healthy system")

	// A request whose PackageVariant never renders: stuck at half of CREATION_TIMEOUT.
	stuckAt := time.Now()
	submit(t, op.NBIURL, "alert-stuck", neverRenders, map[string]any{"clusterName": "edge-alert-stuck"})
	// Every series the rules read exists now (the NBI's counters appear with its first request).
	assertExposed(t, op.HealthURL)
	stuck := prom.waitAlert(t, "O2IMSProvisioningRequestStuck", 60*time.Second)
	assert.Equal(t, "progressing", stuck.Labels["state"])
	assert.Equal(t, "warning", stuck.Labels["severity"])
	assert.Contains(t, stuck.Annotations["runbook_url"], "runbook.md#o2imsprovisioningrequeststuck")
	took := time.Since(stuckAt)
	t.Logf("O2IMSProvisioningRequestStuck firing %s after the request was submitted", took.Round(time.Millisecond))
	assert.GreaterOrEqual(t, took, testCreationTimeout/2-time.Second, "not before half of CREATION_TIMEOUT")
	assert.NotContains(t, names(prom.firing(t)), "O2IMSHostQuarantined", "no quarantine yet")
	if am != "" {
		a := waitAlertAlarm(t, op.NBIURL, "O2IMSProvisioningRequestStuck", 30*time.Second, false)
		assert.EqualValues(t, 3, a["perceivedSeverity"], "warning")
	}

	// A request whose only matching host has bad BMC credentials: the host is quarantined.
	quarantineAt := time.Now()
	submit(t, op.NBIURL, "alert-quarantine", "nephio-workload-cluster", map[string]any{"clusterName": "edge-alert-q",
		"hosts": []any{map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"rack": "r-bad"}}}})
	q := prom.waitAlert(t, "O2IMSHostQuarantined", 60*time.Second)
	assert.Equal(t, "credentials-invalid", q.Labels["reason"])
	t.Logf("O2IMSHostQuarantined firing %s after the request was submitted", time.Since(quarantineAt).Round(time.Millisecond))
	for _, d := range st.NetBox.Devices() {
		if d.ID == bad {
			assert.Equal(t, "failed", d.Status, "the device is quarantined in NetBox")
		}
	}
	prom.waitAlert(t, "O2IMSHostPoolExhausted", 30*time.Second)

	// The stuck request's budget runs out: it fails, and the failing alert fires.
	prom.waitAlert(t, "O2IMSProvisioningRequestsFailing", testCreationTimeout+30*time.Second)
	if am != "" {
		// Failed, the requests are no longer stuck (the quarantined one fails on its own budget): the
		// alert resolves, and its alarm clears.
		waitAlertAlarm(t, op.NBIURL, "O2IMSProvisioningRequestStuck", 90*time.Second, true)
		waitAlertAlarm(t, op.NBIURL, "O2IMSProvisioningRequestsFailing", 30*time.Second, false)
	}
	firing := names(prom.firing(t))
	for _, a := range []string{"O2IMSOperatorAbsent", "O2IMSOperatorNotReady", "O2IMSOperatorNoLeader", "O2IMSNetBoxUnreachable",
		"O2IMSNetBoxErrors", "O2IMSNorthboundErrors", "O2IMSEventsDropped", "O2IMSEventWritesFailing", "O2IMSHandlerErrorsSustained"} {
		assert.NotContains(t, firing, a, "nothing is wrong with the operator itself")
	}

	// The operator gone: absent.
	require.NoError(t, op.Stop(5*time.Second))
	goneAt := time.Now()
	prom.waitAlert(t, "O2IMSOperatorAbsent", 60*time.Second)
	t.Logf("O2IMSOperatorAbsent firing %s after the operator stopped; whole test %s",
		time.Since(goneAt).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// ---- Prometheus ----

type promServer struct {
	url string
	cmd *exec.Cmd
	log string
}

// startPrometheus runs Prometheus on a loopback port with its own data directory, the shipped rules (every
// `for` at 0s) and one scrape job on target, every second.
func startPrometheus(t *testing.T, bin, dir, target, alertmanager string) *promServer {
	t.Helper()
	rules, err := LoadRules()
	require.NoError(t, err)
	rulesPath, err := writeJSONAsYAML(dir, "o2ims-operator.rules.yaml", ForAllZero(rules))
	require.NoError(t, err)
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: o2ims-operator
    static_configs:
      - targets: [%q]
`, rulesPath, target)
	if alertmanager != "" {
		config += fmt.Sprintf(`alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
`, alertmanager)
	}
	return startPrometheusWith(t, bin, dir, config)
}

// startPrometheusWith runs Prometheus on a loopback port with its own data directory and config.
func startPrometheusWith(t *testing.T, bin, dir, config string) *promServer {
	t.Helper()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o600))
	ports, err := kubeapi.FreePorts(1)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	p := &promServer{url: "http://" + addr, cmd: cmd, log: logPath}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("prometheus log:\n%s", b)
		}
	})
	waitFor(t, 60*time.Second, "Prometheus ready", func() (bool, string) {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("prometheus exited:\n%s", b)
		default:
		}
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

func (p *promServer) api(t *testing.T, path string, into any) {
	t.Helper()
	resp, err := http.Get(p.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(b, &env))
	require.Equal(t, "success", env.Status, string(b))
	require.NoError(t, json.Unmarshal(env.Data, into))
}

// scalar evaluates an instant query expected to have one series.
func (p *promServer) scalar(t *testing.T, query string) (float64, bool) {
	t.Helper()
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	p.api(t, "/api/v1/query?query="+url.QueryEscape(query), &data)
	if len(data.Result) != 1 {
		return 0, false
	}
	var v float64
	_, err := fmt.Sscan(fmt.Sprint(data.Result[0].Value[1]), &v)
	return v, err == nil
}

// rulesHealthy: both groups loaded with every rule of the shipped file, each evaluated without error.
func (p *promServer) rulesHealthy(t *testing.T) (bool, string) {
	t.Helper()
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	p.api(t, "/api/v1/rules", &data)
	rules, err := LoadRules()
	require.NoError(t, err)
	want := 0
	for _, g := range rules.Groups {
		want += len(g.Rules)
	}
	got := 0
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			got++
			if r.Health != "ok" {
				if r.Health == "err" {
					t.Fatalf("rule %s in %s does not evaluate: %s", r.Name, g.Name, r.LastError)
				}
				return false, fmt.Sprintf("rule %s: %s", r.Name, r.Health)
			}
		}
	}
	return got == want, fmt.Sprintf("%d of %d rules loaded", got, want)
}

type alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

func (p *promServer) firing(t *testing.T) []alert {
	t.Helper()
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	p.api(t, "/api/v1/alerts", &data)
	var out []alert
	for _, a := range data.Alerts {
		if a.State == "firing" {
			out = append(out, a)
		}
	}
	return out
}

func (p *promServer) waitAlert(t *testing.T, name string, timeout time.Duration) alert {
	t.Helper()
	var found alert
	waitFor(t, timeout, name+" firing", func() (bool, string) {
		fs := p.firing(t)
		for _, a := range fs {
			if a.Labels["alertname"] == name {
				found = a
				return true, ""
			}
		}
		return false, fmt.Sprintf("firing: %v", names(fs))
	})
	return found
}

func names(as []alert) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Labels["alertname"])
	}
	return out
}

// waitFor polls cond every 250 ms (on the test's goroutine); on timeout it fails with cond's last detail.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var detail string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true,
		func(context.Context) (ok bool, _ error) {
			ok, detail = cond()
			return ok, nil
		})
	if err != nil {
		t.Fatalf("%s: not within %s (%s)", what, timeout, detail)
	}
}

// ---- the operator ----

func submit(t *testing.T, nbi, id, template string, params map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"provisioningRequestId": id, "name": id, "description": "alerting test",
		"templateName": template, "templateVersion": "v1.0.0", "templateParameters": params,
	})
	resp, err := http.Post(nbi+nbiBase, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(b))
}

// assertExposed: every metric the shipped rules read is in the operator's exposition.
func assertExposed(t *testing.T, healthURL string) {
	t.Helper()
	resp, err := http.Get(healthURL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	exposed := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		exposed[name] = true
	}
	rules, err := LoadRules()
	require.NoError(t, err)
	for m := range usedMetrics(rules) {
		assert.True(t, exposed[m], "the rules read %s, which the operator does not expose", m)
	}
}

// waitAlertAlarm waits for the alarm the NBI holds of alert (Alertmanager's webhook: extensions.alertname),
// cleared or active, and answers it.
func waitAlertAlarm(t *testing.T, nbiURL, alert string, timeout time.Duration, cleared bool) map[string]any {
	t.Helper()
	list := nbiURL + alarmsapi.Root + "/v1/alarms?filter=" + url.QueryEscape("(eq,extensions/alertname,"+alert+")")
	var got map[string]any
	waitFor(t, timeout, fmt.Sprintf("the alarm of %s (cleared: %v) from Alertmanager's webhook", alert, cleared), func() (bool, string) {
		resp, err := http.Get(list)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var alarms []map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&alarms); err != nil || len(alarms) != 1 {
			return false, fmt.Sprintf("%s: %d alarms (%v)", resp.Status, len(alarms), err)
		}
		got = alarms[0]
		_, isCleared := got["alarmClearedTime"]
		return isCleared == cleared, fmt.Sprintf("cleared: %v", isCleared)
	})
	t.Logf("alarm %v of %s through Alertmanager's webhook, cleared: %v", got["alarmEventRecordId"], alert, cleared)
	return got
}
