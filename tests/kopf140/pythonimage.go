package kopf140

import (
	"encoding/json"
	"time"
)

// What the released Python image leaves on objects (kopf-observed.md), to drive upgrade and rollback
// tests with objects exactly as it leaves them.

// Format is kopf 1.40.1's time format: isoformat(timespec='microseconds') of an aware UTC datetime.
func Format(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00" }

// MidFlightAnnotations are the annotations of a request whose create_fn was waiting (on the Cluster) when
// the Python image stopped, its first pass at t0: create_fn's record with its subrefs, the three
// sub-handler records under both keys, and the marker. No diff-base (create is not done), no finalizer.
func MidFlightAnnotations(t0 time.Time) map[string]string {
	at := func(ms int) string { return Format(t0.Add(time.Duration(ms) * time.Millisecond)) }
	createFn := `{"started":"` + at(0) + `","delayed":"` + at(16215) + `","purpose":"create","retries":2,"success":false,"failure":false,"message":"None",` +
		`"subrefs":["create_fn/create_fn.<locals>.check_c_status","create_fn/create_fn.<locals>.sub_creation","create_fn/create_fn.<locals>.sub_validations"]}`
	validations := `{"started":"` + at(1) + `","stopped":"` + at(13) + `","purpose":"create","retries":1,"success":true,"failure":false}`
	creation := `{"started":"` + at(13) + `","stopped":"` + at(202) + `","purpose":"create","retries":1,"success":true,"failure":false}`
	status := `{"started":"` + at(202) + `","purpose":"create","retries":0,"success":false,"failure":false}`
	p := Prefix + "/"
	return map[string]string{
		p + "create_fn": createFn,
		p + "create_fn.create_fn._locals_.sub_validations": validations, p + "create_-FCg65g": validations,
		p + "create_fn.create_fn._locals_.sub_creation": creation, p + "create_-1y2VFQ": creation,
		p + "create_fn.create_fn._locals_.check_c_status": status, p + "create_-PCIGzQ": status,
		p + Marker: "yes",
	}
}

// FulfilledAnnotations are a fulfilled request's: the marker and the diff-base (kopf's JSON of the
// essence, metadata last, plus a newline) under both keys.
func FulfilledAnnotations(spec map[string]any, labels map[string]string) map[string]string {
	// kopf appends metadata after the body's own fields.
	s, _ := json.Marshal(spec)
	base := `{"spec":` + string(s)
	if len(labels) > 0 {
		l, _ := json.Marshal(labels)
		base += `,"metadata":{"labels":` + string(l) + `}`
	}
	base += "}\n"
	p := Prefix + "/"
	return map[string]string{p + Marker: "yes", p + DiffBaseKeys[0]: base, p + DiffBaseKeys[1]: base}
}

// PackageVariantSpec is the spec the Python image writes for a request: upstream UPSTREAM_PKG_REPO /
// templateName / templateVersion, downstream mgmt / clusterName, the approval annotation, and the
// set-labels mutator when templateParameters.labels is a map. Its PackageVariant (name = the request's,
// namespace default) has no labels, no annotations and no ownerReferences.
func PackageVariantSpec(upstreamRepo, template, version, clusterName string, labels map[string]any) map[string]any {
	spec := map[string]any{
		"upstream":    map[string]any{"repo": upstreamRepo, "package": template, "workspaceName": version},
		"downstream":  map[string]any{"repo": "mgmt", "package": clusterName},
		"annotations": map[string]any{"approval.nephio.org/policy": "initial"},
	}
	if labels != nil {
		spec["pipeline"] = map[string]any{"mutators": []any{map[string]any{"image": "gcr.io/kpt-fn/set-labels:v0.2.0", "configMap": labels}}}
	}
	return spec
}
