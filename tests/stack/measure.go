package stack

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

// RestartAPIServer stops kube-apiserver (etcd keeps the data) for down, then starts it again on the same
// port: clients see connection errors, then a server that lost every watch.
func (s *Stack) RestartAPIServer(ctx context.Context, down time.Duration) error {
	s.API.StopAPIServer()
	select {
	case <-ctx.Done():
	case <-time.After(down):
	}
	return s.API.StartAPIServer(ctx)
}

// Memory is a process's resident set: now and its peak (VmRSS, VmHWM).
type Memory struct{ RSS, Peak uint64 }

// Memory reads the operator's resident memory from /proc.
func (o *Operator) Memory() (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", o.Pid()))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			m.RSS = kb * 1024
		case "VmHWM:":
			m.Peak = kb * 1024
		}
	}
	return m, sc.Err()
}

// Metrics is one scrape of the operator's /metrics (Sum, Value, Histogram… are promtest's).
type Metrics = promtest.Families

// Scrape reads the operator's metrics.
func (o *Operator) Scrape() (Metrics, error) {
	resp, err := http.Get(o.HealthURL + "/metrics") //nolint:noctx // loopback, bounded by the operator
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered %d", resp.StatusCode)
	}
	return promtest.Parse(resp.Body)
}

// Writes is, in m, the operator's mutating API requests (POST, PUT, PATCH, DELETE) by resource, from
// o2ims_rest_client_requests_by_resource_total (counted at its client transport).
func Writes(m Metrics) map[string]float64 {
	out := map[string]float64{}
	fam, ok := m["o2ims_rest_client_requests_by_resource_total"]
	if !ok {
		return out
	}
	for _, s := range fam.GetMetric() {
		var method, resource string
		for _, l := range s.GetLabel() {
			switch l.GetName() {
			case "method":
				method = l.GetValue()
			case "resource":
				resource = l.GetValue()
			}
		}
		if method == http.MethodGet || method == http.MethodHead || method == "" {
			continue
		}
		out[resource] += s.GetCounter().GetValue()
	}
	return out
}
