// Package kopf140 reads the kopf state on a ProvisioningRequest as the released Python O2IMS image (kopf
// 1.40.1) reads it, to tell whether that image, rolled back to, can carry on with the object. It is a
// test oracle written from kopf 1.40.1's rules (kopf-observed.md and kopf's progression/progress/diffbase
// modules), independent of the operator's own framework/kopf: the keys are the ones the image was seen to
// write, not ones our Namer computes.
package kopf140

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Prefix is the Python image's kopf persistence prefix.
const Prefix = "provisioningrequests.o2ims.provisioning.oran.org"

// Handler is one of the Python image's handler ids and the keys kopf 1.40.1 reads its record from, in its
// order (V2, then the V1 short key).
type Handler struct {
	ID   string
	Keys []string
}

// Handlers are the handler ids of the Python image: create_fn and the three sub-handlers it declares
// inside itself (hence Python's "<locals>" in their ids). Keys as observed on objects it handled.
var Handlers = []Handler{
	{"create_fn", []string{"create_fn"}},
	{"create_fn/create_fn.<locals>.sub_validations", []string{"create_fn.create_fn._locals_.sub_validations", "create_-FCg65g"}},
	{"create_fn/create_fn.<locals>.sub_creation", []string{"create_fn.create_fn._locals_.sub_creation", "create_-1y2VFQ"}},
	{"create_fn/create_fn.<locals>.check_c_status", []string{"create_fn.create_fn._locals_.check_c_status", "create_-PCIGzQ"}},
}

// DiffBaseKeys are where kopf 1.40.1 reads the last handled configuration (V2, then V1).
var DiffBaseKeys = []string{"last-handled-configuration", "last-ha-a.A3qw"}

// Marker is kopf's marker annotation under a prefix.
const Marker = "kopf-managed"

// iso8601 is the shape pyiso8601 (kopf 1.40.1's parser) accepts in the extended format kopf writes: a date,
// optionally a time with optional minutes, seconds and fraction, and an optional zone.
var iso8601 = regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})([ T](\d{2})(:(\d{2})(:(\d{1,2})([.,]\d+)?)?)?(Z|[-+]\d{2}(:?\d{2})?)?)?$`)

// parseTime is iso8601.parse_date(val, default_timezone=None): aware is false for a time without a zone,
// which kopf 1.40.1 keeps naive and then fails to compare with its aware clock (TypeError).
func parseTime(s string) (t time.Time, aware bool, err error) {
	m := iso8601.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, false, fmt.Errorf("%q is not ISO 8601 (iso8601.ParseError)", s)
	}
	if m[11] == "" {
		return time.Time{}, false, fmt.Errorf("%q has no timezone: kopf 1.40.1 keeps it naive and raises TypeError comparing it with its aware clock", s)
	}
	layout := "2006-1-2T15:04:05"
	v := strings.Replace(s, " ", "T", 1)
	zone := m[11]
	v = strings.TrimSuffix(v, zone)
	if m[10] != "" {
		v = strings.Replace(v, ",", ".", 1)
		layout += ".999999999"
	}
	switch {
	case zone == "Z":
		zone = "+00:00"
	case len(zone) == 3:
		zone += ":00"
	case len(zone) == 5:
		zone = zone[:3] + ":" + zone[3:]
	}
	t, err = time.Parse(layout+"-07:00", v+zone)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%q: %v", s, err)
	}
	return t.UTC(), true, nil
}

// Record is a handler's record as kopf 1.40.1 takes it (HandlerState.from_storage).
type Record struct {
	Raw                       string
	Started, Stopped, Delayed time.Time
	Retries                   int
	Success, Failure          bool
	Subrefs                   []string
}

// Report is what kopf 1.40.1 makes of an object's kopf state.
type Report struct {
	// Problems are what would make kopf 1.40.1 raise, stall or misread: a record it cannot parse, a naive
	// time, a value of the wrong type, an id or key it does not know, V1 and V2 keys that disagree.
	Problems []string
	// Records by handler id, as read.
	Records map[string]Record
	// DiffBase is the parsed last handled configuration (nil when absent).
	DiffBase map[string]any
}

// Read applies kopf 1.40.1's reading rules to an object's annotations.
func Read(obj *unstructured.Unstructured) Report {
	ann := obj.GetAnnotations()
	r := Report{Records: map[string]Record{}}
	problem := func(format string, a ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, a...)) }

	known := map[string]bool{Marker: true}
	ids := map[string]bool{}
	for _, h := range Handlers {
		ids[h.ID] = true
		for _, k := range h.Keys {
			known[k] = true
		}
	}
	for _, k := range DiffBaseKeys {
		known[k] = true
	}
	var keys []string
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if name, ok := strings.CutPrefix(k, Prefix+"/"); ok && !known[name] {
			problem("%s: a key kopf 1.40.1 never reads nor purges", k)
		}
	}
	if v, ok := ann[Prefix+"/"+Marker]; ok && v != "yes" {
		problem("%s is %q, not \"yes\"", Marker, v)
	}

	for _, h := range Handlers {
		raw, key, found := fetch(ann, h.Keys, problem)
		if !found {
			continue
		}
		rec, errs := decodeRecord(raw)
		for _, e := range errs {
			problem("%s: %s", key, e)
		}
		for _, s := range rec.Subrefs {
			if !ids[s] {
				problem("%s: subref %q is no handler id of the Python image", key, s)
			}
		}
		r.Records[h.ID] = rec
	}

	if raw, key, found := fetch(ann, DiffBaseKeys, problem); found {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			problem("%s: json.loads fails: %v", key, err)
		} else if m, ok := v.(map[string]any); !ok {
			problem("%s: a JSON %T, not an object", key, v)
		} else {
			r.DiffBase = m
		}
	}
	return r
}

// fetch is kopf's storage fetch: the first key whose value is not JSON null; both keys, when both are
// there, must agree (kopf writes both; it reads only the first).
func fetch(ann map[string]string, names []string, problem func(string, ...any)) (raw, key string, found bool) {
	for _, n := range names {
		v, ok := ann[Prefix+"/"+n]
		if !ok || strings.TrimSpace(v) == "null" {
			continue
		}
		if !found {
			raw, key, found = v, Prefix+"/"+n, true
			continue
		}
		if v != raw {
			problem("%s and %s differ: kopf reads only the first", key, Prefix+"/"+n)
		}
	}
	return raw, key, found
}

func decodeRecord(raw string) (Record, []string) {
	rec := Record{Raw: raw}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return rec, []string{fmt.Sprintf("json.loads fails or not an object: %v", err)}
	}
	var errs []string
	for _, f := range []struct {
		name string
		into *time.Time
	}{{"started", &rec.Started}, {"stopped", &rec.Stopped}, {"delayed", &rec.Delayed}} {
		switch v := m[f.name].(type) {
		case nil:
		case string:
			t, _, err := parseTime(v)
			if err != nil {
				errs = append(errs, f.name+": "+err.Error())
			}
			*f.into = t
		default:
			errs = append(errs, fmt.Sprintf("%s: a JSON %T, not a string", f.name, v))
		}
	}
	switch v := m["retries"].(type) {
	case nil:
	case float64:
		if v != float64(int(v)) || v < 0 {
			errs = append(errs, fmt.Sprintf("retries: %v is not a count", v))
		}
		rec.Retries = int(v)
	default:
		errs = append(errs, fmt.Sprintf("retries: a JSON %T, not an integer", v))
	}
	for _, f := range []struct {
		name string
		into *bool
	}{{"success", &rec.Success}, {"failure", &rec.Failure}} {
		switch v := m[f.name].(type) {
		case nil:
		case bool:
			*f.into = v
		default:
			// Python would take any non-empty value as true: "false" would finish the handler.
			errs = append(errs, fmt.Sprintf("%s: a JSON %T, not a boolean", f.name, v))
		}
	}
	if p, ok := m["purpose"]; ok && p != nil {
		if _, isStr := p.(string); !isStr {
			errs = append(errs, fmt.Sprintf("purpose: a JSON %T, not a string", p))
		}
	}
	switch v := m["subrefs"].(type) {
	case nil:
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				errs = append(errs, fmt.Sprintf("subrefs: a JSON %T among them", e))
				continue
			}
			rec.Subrefs = append(rec.Subrefs, s)
		}
	default:
		errs = append(errs, fmt.Sprintf("subrefs: a JSON %T, not a list", v))
	}
	return rec, errs
}

// Essence is the object's essence as kopf 1.40.1 builds it to compare with the diff-base: the body
// without apiVersion, kind, metadata and status, plus labels and annotations, without annotations of
// kopf-marked prefixes (ours included), kubectl's last-applied-configuration, and empty stanzas.
func Essence(obj *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range obj.Object {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		out[k] = v
	}
	meta := map[string]any{}
	if l := obj.GetLabels(); len(l) > 0 {
		meta["labels"] = toAny(l)
	}
	ann := obj.GetAnnotations()
	marked := map[string]bool{}
	for k := range ann {
		prefix, name, ok := strings.Cut(k, "/")
		if ok && (name == Marker || prefix == "kopf.zalando.org" || strings.HasSuffix(prefix, ".kopf.zalando.org")) {
			marked[prefix] = true
		}
	}
	kept := map[string]string{}
	for k, v := range ann {
		prefix, _, ok := strings.Cut(k, "/")
		if (ok && (marked[prefix] || prefix == Prefix)) || k == "kubectl.kubernetes.io/last-applied-configuration" {
			continue
		}
		kept[k] = v
	}
	if len(kept) > 0 {
		meta["annotations"] = toAny(kept)
	}
	if len(meta) > 0 {
		out["metadata"] = meta
	}
	return out
}

// SeesNoChange tells whether kopf 1.40.1 would find no difference between the diff-base and the object
// (no update cause): Python compares the two as values (1 == 1.0).
func (r Report) SeesNoChange(obj *unstructured.Unstructured) bool {
	return r.DiffBase != nil && reflect.DeepEqual(normalize(r.DiffBase), normalize(Essence(obj)))
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// Sleeping is HandlerState.sleeping at now: not finished and delayed into the future. It is where kopf
// 1.40.1 compares a record's time with its clock.
func (rec Record) Sleeping(now time.Time) bool {
	return !rec.Success && !rec.Failure && !rec.Delayed.IsZero() && rec.Delayed.After(now)
}
