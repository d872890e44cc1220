package performance

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// Queries is the one table from a measurement of the performance dictionaries (inventory.Measurements,
// by performanceMeasurementId) to the PromQL that computes it from the Prometheus node exporter's metrics
// (github.com/prometheus/node_exporter: collector/cpu_linux.go, meminfo.go, netdev_common.go,
// hwmon_linux.go name them). $SELECTOR is replaced by the matcher of the job's hosts, $WINDOW by the
// range of a rate (RateWindow). Every query answers one sample per host, labelled instance.
var Queries = map[string]string{
	"cpu.utilization":        `100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle",$SELECTOR}[$WINDOW])))`,
	"memory.total":           `sum by (instance) (node_memory_MemTotal_bytes{$SELECTOR})`,
	"memory.available":       `sum by (instance) (node_memory_MemAvailable_bytes{$SELECTOR})`,
	"network.receive.bytes":  `sum by (instance) (rate(node_network_receive_bytes_total{device!="lo",$SELECTOR}[$WINDOW]))`,
	"network.transmit.bytes": `sum by (instance) (rate(node_network_transmit_bytes_total{device!="lo",$SELECTOR}[$WINDOW]))`,
	"power.average":          `sum by (instance) (node_hwmon_power_average_watt{$SELECTOR})`,
}

// InstanceLabel is the label of a node exporter target that names its host. The mapping from an
// inventory resource to its node exporter target is explicit and has one rule: the instance label is
// the NetBox device's name (the resource's extensions.name), optionally followed by ":port" — scrape
// each host by its DNS name (as kube-prometheus-stack's node exporter does with its node name) or relabel
// instance to that name. A host whose target is named otherwise has no sample, and its values are absent
// from the job's collectedMeasurements (the job says which resources answered nothing).
const InstanceLabel = "instance"

// Target is one inventory resource a job may measure.
type Target struct {
	ResourceID string
	TypeID     string
	PoolID     string
	Name       string // the NetBox device name: the instance label's host part
}

// TargetsOf lists the resources of an inventory snapshot as targets.
func TargetsOf(s *inventory.Snapshot) []Target {
	var out []Target
	for _, pool := range s.Pools {
		for _, r := range s.Resources[pool.ID] {
			ext, _ := r.Attrs["extensions"].(map[string]any)
			name, _ := ext[inventory.ExtName].(string)
			typ, _ := r.Attrs["resourceTypeId"].(string)
			out = append(out, Target{ResourceID: r.ID, TypeID: typ, PoolID: pool.ID, Name: name})
		}
	}
	return out
}

// RateWindow is the range of a counter's rate for a job collecting every interval: the interval, and
// never less than a minute, so that a scrape interval up to 30 s leaves two samples in it.
func RateWindow(interval time.Duration) time.Duration { return max(interval, time.Minute) }

// Query is the PromQL of measurement id over the hosts named in names, with window as the rate's range.
func Query(id string, names []string, window time.Duration) (string, error) {
	tmpl, ok := Queries[id]
	if !ok {
		return "", fmt.Errorf("measurement %q has no query", id)
	}
	alts := make([]string, len(names))
	for i, n := range names {
		alts[i] = regexp.QuoteMeta(n)
	}
	// A PromQL regex is fully anchored (RE2): the host, then an optional port.
	sel := fmt.Sprintf(`%s=~"(%s)(:[0-9]+)?"`, InstanceLabel, escapePromQLString(strings.Join(alts, "|")))
	return strings.NewReplacer("$SELECTOR", sel, "$WINDOW", fmt.Sprintf("%ds", int(window.Seconds()))).Replace(tmpl), nil
}

// escapePromQLString escapes a value for a double-quoted PromQL string (Go's escapes).
func escapePromQLString(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// HostOf is the host part of an instance label value ("host-1:9100" → "host-1"; "[::1]:9100" → "::1").
func HostOf(instance string) string {
	if strings.HasPrefix(instance, "[") {
		if i := strings.Index(instance, "]"); i > 0 {
			return instance[1:i]
		}
	}
	if i := strings.LastIndex(instance, ":"); i >= 0 && strings.Count(instance, ":") == 1 {
		return instance[:i]
	}
	return instance
}
