package alerting

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/alarmsapi"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// CaptureDir is where the captured webhook bodies are kept, relative to the repository root (their rows
// in testdata/reference/SOURCES.md); the alarms' unit tests post them.
const CaptureDir = "testdata/reference/alertmanager"

// captureExternalURL is the Alertmanager's --web.external-url during the capture: it is in every body, and
// would otherwise be the capturing machine's host name.
const captureExternalURL = "http://alertmanager.example:9093"

// Not a test but the capture of the unit tests' input, run by hand (O2IMS_CAPTURE_ALERTMANAGER=1): Debian's
// real Alertmanager with the shipped route and receiver posts to a recording receiver at the NBI's webhook
// path a firing O2IMSNetBoxErrors alert (posted to its API as Prometheus posts it, with the shipped rule's
// labels and annotations, its template expanded) and then its resolution; both bodies are written byte
// for byte to CaptureDir.
func TestCaptureAlertmanagerWebhook(t *testing.T) {
	if os.Getenv("O2IMS_CAPTURE_ALERTMANAGER") == "" {
		t.Skip("a capture, run by hand: O2IMS_CAPTURE_ALERTMANAGER=1 (it rewrites " + CaptureDir + ")")
	}
	bin := AlertmanagerBinary(t)
	bodies := make(chan []byte, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != alarmsapi.AlertmanagerPath {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		t.Logf("%s %s User-Agent %q Content-Type %q", r.Method, r.URL.Path, r.UserAgent(), r.Header.Get("Content-Type"))
		bodies <- b
		w.WriteHeader(http.StatusNoContent) // as the NBI answers
	}))
	defer recv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("capture"), 0o600))
	am := StartAlertmanager(t, bin, ShippedAlertmanagerConfig(t, recv.URL, alarmsapi.AlertmanagerPath, tokenFile, ""),
		"--web.external-url="+captureExternalURL)

	rule := shippedAlert(t, "O2IMSNetBoxErrors")
	labels := map[string]string{"instance": "10.244.0.12:8080", "job": "o2ims-operator", "alertname": rule.Alert}
	for k, v := range rule.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range rule.Annotations {
		annotations[k] = strings.ReplaceAll(v, `{{ printf "%.3f" $value }}`, "0.250") // as Prometheus expands it
	}
	startsAt := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	// Prometheus's own link (strutil.TableLinkForExpression) under its external URL.
	generator := "http://prometheus.example:9090/graph?g0.expr=" + url.QueryEscape(rule.Expr) + "&g0.tab=1"
	post := func(endsAt time.Time) {
		alert := map[string]any{"labels": labels, "annotations": annotations, "startsAt": startsAt.Format(time.RFC3339),
			"generatorURL": generator}
		if !endsAt.IsZero() {
			alert["endsAt"] = endsAt.Format(time.RFC3339)
		}
		b, err := json.Marshal([]any{alert})
		require.NoError(t, err)
		resp, err := http.Post(am+"/api/v2/alerts", "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	keep := func(status string) {
		select {
		case b := <-bodies:
			require.Contains(t, string(b), `"status":"`+status+`"`)
			p := filepath.Join(root, CaptureDir, status+".json")
			require.NoError(t, os.WriteFile(p, b, 0o644))
			t.Logf("%s: sha256 %x, %d bytes", p, sha256.Sum256(b), len(b))
		case <-time.After(60 * time.Second):
			t.Fatalf("Alertmanager posted no %s notification", status)
		}
	}
	post(time.Time{})
	keep("firing")
	post(time.Now().Add(-time.Second).UTC().Truncate(time.Second))
	keep("resolved")
}

// shippedAlert is the shipped alerting rule named name.
func shippedAlert(t *testing.T, name string) Rule {
	t.Helper()
	rules, err := LoadRules()
	require.NoError(t, err)
	for _, r := range rules.Alerts() {
		if r.Alert == name {
			return r
		}
	}
	require.FailNow(t, fmt.Sprintf("no shipped alert %s", name))
	return Rule{}
}
