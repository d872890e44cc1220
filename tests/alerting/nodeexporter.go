package alerting

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

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// NodeExporter stands in for one host's Prometheus node exporter, for the performance measurement jobs'
// tests: the metric names and labels node_exporter writes (github.com/prometheus/node_exporter
// collector/meminfo.go: node_memory_<field>_bytes; cpu_linux.go: node_cpu_seconds_total{cpu,mode};
// netdev_common.go: node_network_{receive,transmit}_bytes_total{device}; hwmon_linux.go:
// node_hwmon_power_average_watt{chip,sensor}) with values the test sets, client_golang's registry served
// over loopback. The counters stay constant (every CPU busy, no traffic), so their rates are 0.
type NodeExporter struct {
	MemTotal, MemAvailable prometheus.Gauge
	Addr                   string // host:port to scrape
}

// NewNodeExporter serves an exporter until the test ends; power adds a hwmon power sensor of 180 W.
func NewNodeExporter(t testing.TB, memTotal, memAvailable float64, power bool) *NodeExporter {
	t.Helper()
	reg := prometheus.NewRegistry()
	x := &NodeExporter{
		MemTotal:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "node_memory_MemTotal_bytes"}),
		MemAvailable: prometheus.NewGauge(prometheus.GaugeOpts{Name: "node_memory_MemAvailable_bytes"}),
	}
	x.MemTotal.Set(memTotal)
	x.MemAvailable.Set(memAvailable)
	cpu := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "node_cpu_seconds_total"}, []string{"cpu", "mode"})
	cpu.WithLabelValues("0", "idle").Add(1000)
	cpu.WithLabelValues("0", "user").Add(50)
	rx := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "node_network_receive_bytes_total"}, []string{"device"})
	rx.WithLabelValues("eth0").Add(1 << 20)
	tx := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "node_network_transmit_bytes_total"}, []string{"device"})
	tx.WithLabelValues("eth0").Add(1 << 20)
	reg.MustRegister(x.MemTotal, x.MemAvailable, cpu, rx, tx)
	if power {
		p := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "node_hwmon_power_average_watt"}, []string{"chip", "sensor"})
		p.WithLabelValues("platform_acpi", "power1").Set(180)
		reg.MustRegister(p)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	x.Addr = strings.TrimPrefix(srv.URL, "http://")
	return x
}

// NodeScrapeConfig is a Prometheus configuration scraping every second, job "node", each target
// (host:port → instance label) given its instance label as a scrape configuration that names hosts does.
func NodeScrapeConfig(instances map[string]string) string {
	var b strings.Builder
	b.WriteString("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: node\n    static_configs:\n")
	for addr, instance := range instances {
		fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {instance: %q}\n", addr, instance)
	}
	return b.String()
}

// Prometheus is Debian's real Prometheus run by a test (Tool finds it, or the test is skipped).
type Prometheus struct {
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartPrometheus runs Prometheus with config on a loopback port and its own data directory until the
// test ends (or Stop).
func StartPrometheus(t testing.TB, config string) *Prometheus {
	t.Helper()
	bin := Tool(t, "prometheus")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600))
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
	p := &Prometheus{URL: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.done) }()
	t.Cleanup(p.Stop)
	return p
}

// Stop ends Prometheus and waits for its exit: its port refuses from then on.
func (p *Prometheus) Stop() {
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

// Await waits until Prometheus answers query with want on every series (what it scraped, not a timer).
func (p *Prometheus) Await(t testing.TB, query string, want float64) {
	t.Helper()
	client, err := api.NewClient(api.Config{Address: p.URL})
	require.NoError(t, err)
	papi := promv1.NewAPI(client)
	var last string
	require.Eventually(t, func() bool {
		v, _, _, err := papi.Query(context.Background(), query, time.Time{})
		if err != nil {
			last = err.Error()
			return false
		}
		vec, _ := v.(model.Vector)
		last = fmt.Sprint(vec)
		for _, s := range vec {
			if float64(s.Value) != want {
				return false
			}
		}
		return len(vec) > 0
	}, 60*time.Second, 100*time.Millisecond, "Prometheus: %s == %v; last: %s", query, want, lastOf(&last))
}

// lastOf defers reading the last answer to the failure message.
func lastOf(s *string) fmt.Stringer { return stringer(func() string { return *s }) }

type stringer func() string

func (f stringer) String() string { return f() }

// Scraped is the query Await waits on before a rate can be computed: three scrapes of every target.
const Scraped = `count_over_time(up{job="node"}[1m]) >= bool 3`
