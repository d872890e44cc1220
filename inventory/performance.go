package inventory

// Performance dictionaries (O2IMS clause 3.2.6.2.12 PerformanceDictionary, 3.2.6.2.13
// PerformanceMeasurementDefinition; inventory API 1.1.0): one per resource type, listing what a
// performance API can measure on a host of that type. Every resource type is a bare-metal host
// (resourceKind PHYSICAL), measured by the Prometheus node exporter (github.com/prometheus/node_exporter:
// collector/cpu_linux.go, meminfo.go, netdev_common.go, hwmon_linux.go), so every dictionary lists the
// same measurements; power only where the host's hwmon exposes it (the definition says so). Nothing
// here measures: the table says what exists, and its ids stay the same on every replica and restart;
// package performance (Queries) computes each from Prometheus for the measurement jobs.

// PerformanceDictionaryVersion is the dictionaries' performanceDictionaryVersion: raised with every
// change of Measurements.
const PerformanceDictionaryVersion = "1"

// performanceSchemaVersion is the O2IMS API version whose PerformanceDictionary shape is followed.
const performanceSchemaVersion = "2.0.0"

// Measurement is one performance measurement a host can produce.
type Measurement struct {
	ID          string // performanceMeasurementId: stable, never reused
	Description string
	Unit        string
	Method      string // how it is collected: "gauge" (a reading) or "counter" (cumulative, rated over an interval)
	Metric      string // the node exporter metric it is computed from
	Note        string // a condition on its availability ("" none)
}

// Measurements are the measurements of every host, in the order the dictionaries list them.
var Measurements = []Measurement{
	{ID: "cpu.utilization", Description: "Share of CPU time not idle, over all CPUs of the host", Unit: "percent", Method: "counter", Metric: "node_cpu_seconds_total"},
	{ID: "memory.total", Description: "Physical memory of the host", Unit: "bytes", Method: "gauge", Metric: "node_memory_MemTotal_bytes"},
	{ID: "memory.available", Description: "Memory available to new workloads without swapping", Unit: "bytes", Method: "gauge", Metric: "node_memory_MemAvailable_bytes"},
	{ID: "network.receive.bytes", Description: "Bytes received per second, over the host's network interfaces", Unit: "bytes/s", Method: "counter", Metric: "node_network_receive_bytes_total"},
	{ID: "network.transmit.bytes", Description: "Bytes transmitted per second, over the host's network interfaces", Unit: "bytes/s", Method: "counter", Metric: "node_network_transmit_bytes_total"},
	{ID: "power.average", Description: "Average power drawn, as the host's hardware monitor reports it", Unit: "W", Method: "gauge", Metric: "node_hwmon_power_average_watt", Note: "only on hosts whose hwmon exposes a power sensor"},
}

// PerformanceDictionaryID is the id of the performance dictionary of resource type typeID.
func (c Config) PerformanceDictionaryID(typeID string) string {
	return c.id("resourceType/%s/performanceDictionary", typeID)
}

// PerformanceDictionaries answers one dictionary per resource type in types (the view's), in their order.
func PerformanceDictionaries(cfg Config, types []*Entry) []*Entry {
	out := make([]*Entry, 0, len(types))
	for _, t := range types {
		out = append(out, PerformanceDictionary(cfg, t))
	}
	return out
}

// PerformanceDictionary is the dictionary of resource type t.
func PerformanceDictionary(cfg Config, t *Entry) *Entry {
	id := cfg.PerformanceDictionaryID(t.ID)
	vendor, _ := t.Attrs["vendor"].(string)
	model, _ := t.Attrs["model"].(string)
	defs := make([]any, len(Measurements))
	for i, m := range Measurements {
		defs[i] = m.attrs(cfg, id)
	}
	product := model
	if vendor != "" {
		product = vendor + " " + model
	}
	return NewEntry(id, map[string]any{
		"performanceDictionaryId": id, "performanceDictionaryVersion": PerformanceDictionaryVersion,
		"performanceDictionarySchemaVersion": performanceSchemaVersion, "vendorSoftwareProduct": product,
		"supportedInterfaces": "O2IMS", "supportedMeasurements": defs,
	})
}

// attrs is the PerformanceMeasurementDefinition of m in dictionary dict.
func (m Measurement) attrs(cfg Config, dict string) map[string]any {
	def := map[string]any{
		"name": m.ID, "description": m.Description, "measurementUnit": m.Unit, "collectionMethod": m.Method,
	}
	ext := map[string]any{"prometheusMetric": m.Metric, "exporter": "node_exporter"}
	if m.Note != "" {
		ext["availability"] = m.Note
	}
	return map[string]any{
		"performanceMeasurementDefinitionId": cfg.id("%s/measurement/%s", dict, m.ID),
		"performanceMeasurementId":           m.ID, "standardReference": "Prometheus node_exporter (" + m.Metric + ")",
		"supportedInterfaces": "O2IMS", "extensions": ext, "measurementDefinition": def,
	}
}
