package alerting

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// AlertmanagerFile is the shipped Alertmanager route and receiver, relative to the repository root.
const AlertmanagerFile = "manifests/monitoring/alertmanager.yml"

// AlertmanagerBinary is Debian's prometheus-alertmanager (0.25), or a skip saying why there is none (a
// failure where O2IMS_REQUIRE_PROMTOOL is set: CI installs it).
func AlertmanagerBinary(t testing.TB) string {
	t.Helper()
	if p := LookupAlertmanager(t); p != "" {
		return p
	}
	t.Skip(alertmanagerAbsent)
	return ""
}

const alertmanagerAbsent = "prometheus-alertmanager not installed (apt-get install prometheus-alertmanager; CI installs and requires it)"

// LookupAlertmanager is AlertmanagerBinary without the skip: "" when there is none (and it is not required).
func LookupAlertmanager(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("O2IMS_REQUIRE_PROMTOOL") != "" {
		t.Fatal("prometheus-alertmanager is required here (apt-get install prometheus-alertmanager)")
	}
	return ""
}

// ShippedAlertmanagerConfig is the shipped alertmanager.yml with only what a test must change: the
// webhook's scheme and host (nbiURL, the NBI's origin here; the path is kept, and must be
// wantPath), the files it reads the token and CA from (caFile "": no TLS, its tls_config dropped), and
// the group timings (a second, not a minute).
func ShippedAlertmanagerConfig(t testing.TB, nbiURL, wantPath, tokenFile, caFile string) []byte {
	t.Helper()
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, AlertmanagerFile))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	route := cfg["route"].(map[string]any)["routes"].([]any)[0].(map[string]any)
	route["group_wait"], route["group_interval"] = "1s", "1s"
	var hook map[string]any
	for _, r := range cfg["receivers"].([]any) {
		if r.(map[string]any)["name"] == route["receiver"] {
			hook = r.(map[string]any)["webhook_configs"].([]any)[0].(map[string]any)
		}
	}
	require.NotNil(t, hook, "no receiver %v", route["receiver"])
	u, err := url.Parse(hook["url"].(string))
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme, "the shipped webhook is TLS")
	require.Equal(t, wantPath, u.Path)
	nbi, err := url.Parse(nbiURL)
	require.NoError(t, err)
	u.Scheme, u.Host = nbi.Scheme, nbi.Host
	hook["url"] = u.String()
	httpCfg := hook["http_config"].(map[string]any)
	httpCfg["authorization"].(map[string]any)["credentials_file"] = tokenFile
	if caFile == "" {
		delete(httpCfg, "tls_config")
	} else {
		httpCfg["tls_config"].(map[string]any)["ca_file"] = caFile
	}
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return out
}

// StartAlertmanager runs the binary on config, on a loopback port with its own data directory and no
// cluster, until the test ends (its log shown if the test failed); it answers its URL. flags are added to
// its command line.
func StartAlertmanager(t testing.TB, bin string, config []byte, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "alertmanager.yml")
	require.NoError(t, os.WriteFile(cfgPath, config, 0o600))
	ports, err := kubeapi.FreePorts(1)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	logPath := filepath.Join(dir, "alertmanager.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	args := append([]string{"--config.file=" + cfgPath, "--storage.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--cluster.listen-address=", "--log.level=debug"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
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
			t.Logf("alertmanager log:\n%s", b)
		}
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "Alertmanager never ready")
	return base
}
