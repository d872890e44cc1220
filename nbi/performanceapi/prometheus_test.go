package performanceapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/performance"
	"github.com/o2ims-operator/o2ims-operator/tests/alerting"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// exporter stands in for one host's node exporter: the metric names and labels node_exporter writes
// (collector/meminfo.go: node_memory_<field>_bytes; cpu_linux.go: node_cpu_seconds_total{cpu,mode};
// netdev_common.go: node_network_{receive,transmit}_bytes_total{device}; hwmon_linux.go:
// node_hwmon_power_average_watt{chip,sensor}), values the test sets, client_golang's registry served
// over loopback for a real Prometheus to scrape.
type exporter struct {
	memTotal, memAvailable prometheus.Gauge
	addr                   string
}

func newExporter(t *testing.T, memTotal, memAvailable float64, power bool) *exporter {
	t.Helper()
	reg := prometheus.NewRegistry()
	x := &exporter{
		memTotal:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "node_memory_MemTotal_bytes"}),
		memAvailable: prometheus.NewGauge(prometheus.GaugeOpts{Name: "node_memory_MemAvailable_bytes"}),
	}
	x.memTotal.Set(memTotal)
	x.memAvailable.Set(memAvailable)
	cpu := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "node_cpu_seconds_total"}, []string{"cpu", "mode"})
	cpu.WithLabelValues("0", "idle").Add(1000) // constant: no idle time since, every CPU busy
	cpu.WithLabelValues("0", "user").Add(50)
	rx := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "node_network_receive_bytes_total"}, []string{"device"})
	rx.WithLabelValues("eth0").Add(1 << 20) // constant: nothing received since
	tx := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "node_network_transmit_bytes_total"}, []string{"device"})
	tx.WithLabelValues("eth0").Add(1 << 20)
	reg.MustRegister(x.memTotal, x.memAvailable, cpu, rx, tx)
	if power {
		p := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "node_hwmon_power_average_watt"}, []string{"chip", "sensor"})
		p.WithLabelValues("platform_acpi", "power1").Set(180)
		reg.MustRegister(p)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	x.addr = strings.TrimPrefix(srv.URL, "http://")
	return x
}

// promProcess is Debian's real Prometheus, scraping the exporters every second; each is given the
// instance label of its host as a scrape configuration does (host-2 with a port, as a DNS-named target
// has one).
type promProcess struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startPrometheus(t *testing.T, host1, host2 string) *promProcess {
	t.Helper()
	bin := alerting.Tool(t, "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: node
    static_configs:
      - targets: [%q]
        labels: {instance: host-1}
      - targets: [%q]
        labels: {instance: "host-2:9100"}
`, host1, host2)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600))
	ports, err := kubeapi.FreePorts(1)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	p := &promProcess{url: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

// stop ends Prometheus and waits for its exit: its port refuses from then on.
func (p *promProcess) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// await waits until Prometheus answers query with want on every series (what it scraped, not a timer).
func (p *promProcess) await(t *testing.T, query string, want float64) {
	t.Helper()
	api, err := performance.NewPrometheus(performance.PrometheusConfig{URL: p.url, Timeout: 2 * time.Second})
	require.NoError(t, err)
	var last string
	require.Eventually(t, func() bool {
		v, _, _, err := api.Query(context.Background(), query, time.Time{})
		if err != nil {
			last = err.Error()
			return false
		}
		vec, _ := v.(model.Vector)
		last = fmt.Sprint(vec)
		if len(vec) == 0 {
			return false
		}
		for _, s := range vec {
			if float64(s.Value) != want {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "Prometheus: %s == %v; last: %s", query, want, last)
}

// End to end with a real Prometheus: a job created through the NBI reports exactly the values the
// exporters expose, per inventory resource (instance label = NetBox device name, a port stripped);
// a changed value is the next collection's; Prometheus stopped is a FAILED status and an open gap with
// the last values kept; a restart of the NBI and its store finds the job; Prometheus back closes the gap.
func TestJobsReportWhatPrometheusScraped(t *testing.T) {
	e := newEnv(t)
	h1 := newExporter(t, 64e9, 48e9, true)
	h2 := newExporter(t, 32e9, 8e9, false)
	prom := startPrometheus(t, h1.addr, h2.addr)
	e.connect(prom.url)
	prom.await(t, `count_over_time(up{job="node"}[1m]) >= bool 3`, 1) // enough samples for a rate

	all := `{"collectionInterval": 1, "measurementSelectionCriteria": {"performanceMeasurementId":
		["cpu.utilization", "memory.total", "memory.available", "network.receive.bytes", "network.transmit.bytes", "power.average"]}}`
	id := e.post(v2+"/measurementJobs", all).Object(t)["performanceMeasurementJobId"].(string)
	only2 := fmt.Sprintf(`{"collectionInterval": 1, "resourceScopeCriteria": {"resourceId": %q},
		"measurementSelectionCriteria": {"performanceMeasurementId": "memory.total"}}`, e.resourceOf("host-2"))
	id2 := e.post(v2+"/measurementJobs", only2).Object(t)["performanceMeasurementJobId"].(string)
	e.evaluate()

	r1, r2 := e.resourceOf("host-1"), e.resourceOf("host-2")
	job := e.job(id)
	require.Equal(t, "RUNNING", job["status"], "every query answered: %v", collection(job))
	for _, c := range []struct {
		m, r string
		want float64
	}{
		{"memory.total", r1, 64e9}, {"memory.available", r1, 48e9}, {"memory.total", r2, 32e9}, {"memory.available", r2, 8e9},
		{"power.average", r1, 180}, {"cpu.utilization", r1, 100}, {"cpu.utilization", r2, 100},
		{"network.receive.bytes", r1, 0}, {"network.transmit.bytes", r2, 0},
	} {
		got, ok := value(job, c.m, c.r)
		require.True(t, ok, "%s of %s collected", c.m, c.r)
		require.Equal(t, c.want, got, "%s of %s", c.m, c.r)
	}
	_, ok := value(job, "power.average", r2)
	require.False(t, ok, "host-2 exposes no power sensor")
	require.Len(t, job["measuredResources"], 2)
	require.Len(t, job["qualifiedResourceTypes"], 1)
	firstSuccess := collection(job)["lastSuccess"]
	require.NotEmpty(t, firstSuccess)
	scoped := e.job(id2)
	require.Len(t, scoped["collectedMeasurements"], 1, "the scope is host-2 only")
	v, _ := value(scoped, "memory.total", r2)
	require.Equal(t, 32e9, v)

	h1.memAvailable.Set(40e9)
	prom.await(t, `node_memory_MemAvailable_bytes{instance="host-1"}`, 40e9)
	e.evaluate()
	v, _ = value(e.job(id), "memory.available", r1)
	require.Equal(t, 40e9, v, "the next collection's value")

	prom.stop()
	e.evaluate()
	job = e.job(id)
	require.Equal(t, "FAILED", job["status"])
	c := collection(job)
	require.Contains(t, c["message"], "Prometheus unreachable (connection refused)")
	require.Len(t, c["gaps"], 1)
	kept, _ := value(job, "memory.available", r1)
	require.Equal(t, 40e9, kept, "the last values are kept")
	lastGood := c["lastSuccess"]

	e.restart() // a new process on the same store
	job = e.job(id)
	require.Equal(t, "FAILED", job["status"])
	require.Equal(t, lastGood, collection(job)["lastSuccess"])

	prom = startPrometheus(t, h1.addr, h2.addr)
	e.connect(prom.url)
	prom.await(t, `count_over_time(up{job="node"}[1m]) >= bool 3`, 1)
	e.evaluate()
	job = e.job(id)
	require.Equal(t, "RUNNING", job["status"], "%v", collection(job))
	gap := collection(job)["gaps"].([]any)[0].(map[string]any)
	require.Contains(t, gap, "to", "Prometheus back closes the gap")
	require.NotEqual(t, lastGood, collection(job)["lastSuccess"])
}
