// Package spec reads a ProvisioningRequest's spec: the template, the cluster and the hosts it asks for.
// It is pure (no API access), so it is cheap to test and to fuzz: a client wrote this spec, and the
// templateParameters are free-form.
package spec

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
)

// The bounds on hosts. Everything the chain does for a request is proportional to the hosts it asks for
// (one slot, one status record, one NetBox claim, one BareMetalHost each), so the count is bounded here,
// once, before anything is sized by it: an unbounded count ran the operator out of memory. A role holds at
// most MaxHostsPerRole hosts and a request at most MaxHosts over all its roles (so at most MaxHosts roles).
const (
	MaxHostsPerRole = 1000
	MaxHosts        = 1000
)

// FieldError is a refusal of one field of the spec. Its text (Error) is the reason the chain writes in
// "Provisioning request validation failed; reason: …"; Field is the field's path from the spec's root
// ("templateParameters.hosts[0].count"), so the NBI's 400 can name it.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Message }

// Qualified is the message with the field named from the spec's root: the text as it is when it starts
// with the field's path, else prefixed with it.
func (e *FieldError) Qualified() string {
	rel := strings.TrimPrefix(e.Field, "templateParameters.")
	if rel != e.Field && strings.HasPrefix(e.Message, rel) {
		return "templateParameters." + e.Message
	}
	if strings.HasPrefix(e.Message, e.Field) {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// refuse makes the FieldError of field (a path from the spec's root) with a formatted message.
func refuse(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Request is the validated view of a ProvisioningRequest spec.
type Request struct {
	TemplateName    string
	TemplateVersion string
	ClusterName     string
	// Labels, when templateParameters.labels is given, become a set-labels mutator.
	Labels map[string]string
	// Hosts asked for from the inventory; empty means no inventory step (the Python chain as it is).
	Hosts []HostRequest
}

// HostRequest is one role's hosts: count hosts whose inventory custom fields match the selector.
type HostRequest struct {
	Role     string
	Count    int
	Selector map[string]any
}

// Total is the number of hosts asked for.
func (r Request) Total() int {
	n := 0
	for _, h := range r.Hosts {
		n += h.Count
	}
	return n
}

// Parse validates a spec on its shape (mappings, not concrete Go types: the Python operator's
// isinstance(dict) check rejected every real request). reserved are selector keys the inventory owns.
// Every refusal is a *FieldError; its text is the reason shown in "Provisioning request validation
// failed; reason: …". Parse reads at most the spec it is given: nothing it allocates is sized by a value
// in it before that value was checked against its bound.
func Parse(spec map[string]any, reserved map[string]bool) (Request, error) {
	var r Request
	if spec == nil {
		return r, refuse("spec", "spec is missing")
	}
	var err error
	if r.TemplateName, err = requiredString(spec, "templateName"); err != nil {
		return r, err
	}
	if r.TemplateVersion, err = requiredString(spec, "templateVersion"); err != nil {
		return r, err
	}
	raw, ok := spec["templateParameters"]
	if !ok || raw == nil {
		return r, refuse("templateParameters", "templateParameters is missing")
	}
	params, ok := raw.(map[string]any)
	if !ok {
		return r, refuse("templateParameters", "templateParameters must be an object, got %s", quote.JSONType(raw))
	}
	const cnField = "templateParameters.clusterName"
	cn, ok := params["clusterName"]
	if !ok || cn == nil {
		return r, refuse(cnField, "clusterName is missing in template parameters")
	}
	if r.ClusterName, ok = cn.(string); !ok {
		return r, refuse(cnField, "clusterName must be a string, got %s", quote.JSONType(cn))
	}
	// The name becomes a Cluster's name and a Porch package's: a DNS-1123 subdomain.
	if errs := validation.IsDNS1123Subdomain(r.ClusterName); len(errs) > 0 {
		return r, refuse(cnField, "clusterName %q is not a valid name: %s", clip(r.ClusterName), strings.Join(errs, "; "))
	}
	if lr, present := params["labels"]; present && lr != nil {
		lm, ok := lr.(map[string]any)
		if !ok {
			return r, refuse("templateParameters.labels", "labels must be an object, got %s", quote.JSONType(lr))
		}
		r.Labels = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(lm)) {
			field := "templateParameters.labels." + clip(k)
			v, ok := lm[k].(string)
			if !ok {
				return r, refuse(field, "labels.%s must be a string, got %s", clip(k), quote.JSONType(lm[k]))
			}
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return r, refuse(field, "labels key %q is not a valid label key: %s", clip(k), strings.Join(errs, "; "))
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return r, refuse(field, "labels.%s value %q is not a valid label value: %s", clip(k), clip(v), strings.Join(errs, "; "))
			}
			r.Labels[k] = v
		}
	}
	if hr, present := params["hosts"]; present && hr != nil {
		if r.Hosts, err = parseHosts(hr, reserved); err != nil {
			return r, err
		}
	}
	return r, nil
}

func parseHosts(raw any, reserved map[string]bool) ([]HostRequest, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, refuse("templateParameters.hosts", "hosts must be a list, got %s", quote.JSONType(raw))
	}
	if len(list) == 0 {
		return nil, refuse("templateParameters.hosts", "hosts must not be empty when given")
	}
	// Every role asks for at least one host, so more roles than MaxHosts cannot fit either.
	if len(list) > MaxHosts {
		return nil, refuse("templateParameters.hosts", "hosts lists %d roles; a request holds at most %d hosts", len(list), MaxHosts)
	}
	seen := map[string]bool{}
	total := 0
	out := make([]HostRequest, 0, len(list))
	for i, e := range list {
		at := fmt.Sprintf("hosts[%d]", i)
		field := "templateParameters." + at
		m, ok := e.(map[string]any)
		if !ok {
			return nil, refuse(field, "%s must be an object, got %s", at, quote.JSONType(e))
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k != "role" && k != "count" && k != "selector" {
				return nil, refuse(field, "%s has an unknown field %q (role, count, selector)", at, clip(k))
			}
		}
		role, ok := m["role"].(string)
		if !ok || role == "" {
			return nil, refuse(field+".role", "%s.role is missing", at)
		}
		if errs := validation.IsDNS1123Label(role); len(errs) > 0 {
			return nil, refuse(field+".role", "%s.role %q is not a DNS-1123 label: %s", at, clip(role), strings.Join(errs, "; "))
		}
		if seen[role] {
			return nil, refuse(field+".role", "%s.role %q is used twice; roles must be unique", at, role)
		}
		seen[role] = true
		count, err := hostCount(m["count"])
		if err != nil {
			return nil, refuse(field+".count", "%s.count %v", at, err)
		}
		if total += count; total > MaxHosts {
			return nil, refuse(field+".count", "%s.count brings the request to %d hosts; a request holds at most %d", at, total, MaxHosts)
		}
		sel := map[string]any{}
		if sr, present := m["selector"]; present && sr != nil {
			sm, ok := sr.(map[string]any)
			if !ok {
				return nil, refuse(field+".selector", "%s.selector must be an object, got %s", at, quote.JSONType(sr))
			}
			for _, k := range slices.Sorted(maps.Keys(sm)) {
				if reserved[k] {
					return nil, refuse(field+".selector", "%s.selector key %q is reserved for the inventory's own bookkeeping", at, k)
				}
				v, err := scalar(sm[k])
				if err != nil {
					return nil, refuse(field+".selector."+clip(k), "%s.selector.%s %v", at, clip(k), err)
				}
				sel[k] = v
			}
		}
		out = append(out, HostRequest{Role: role, Count: count, Selector: sel})
	}
	return out, nil
}

// scalar accepts the values a custom-field exact match can take: strings, booleans, whole numbers.
func scalar(v any) (any, error) {
	switch t := v.(type) {
	case string, bool:
		return t, nil
	case int64:
		return t, nil
	case int:
		return int64(t), nil
	case float64:
		if t != math.Trunc(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("must be a string, boolean or whole number, got %v", t)
		}
		return int64(t), nil
	default:
		return nil, fmt.Errorf("must be a string, boolean or whole number, got %s", quote.JSONType(v))
	}
}

// hostCount reads a role's count: an integer from 1 to MaxHostsPerRole. A JSON number with no fraction
// (2.0, 1e3) is an integer: the API server stores it as one, so the NBI and the chain read it alike. The
// range is checked on the decoded value before it becomes an int, so no value wraps around.
func hostCount(v any) (int, error) {
	var n int64
	switch t := v.(type) {
	case int64:
		n = t
	case int:
		n = int64(t)
	case float64:
		if t != math.Trunc(t) || math.IsInf(t, 0) {
			return 0, fmt.Errorf("must be a whole number, got %v", t)
		}
		switch { // compared as a float: a huge one must not wrap when it becomes an integer
		case t < 1:
			return 0, fmt.Errorf("must be at least 1, got %v", t)
		case t > MaxHostsPerRole:
			return 0, fmt.Errorf("must be at most %d (hosts per role), got %v", MaxHostsPerRole, t)
		}
		n = int64(t)
	case nil:
		return 0, fmt.Errorf("is missing")
	default:
		return 0, fmt.Errorf("must be a whole number, got %s", quote.JSONType(v))
	}
	if n < 1 {
		return 0, fmt.Errorf("must be at least 1, got %d", n)
	}
	if n > MaxHostsPerRole {
		return 0, fmt.Errorf("must be at most %d (hosts per role), got %d", MaxHostsPerRole, n)
	}
	return int(n), nil
}

func requiredString(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", refuse(key, "%s is missing", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", refuse(key, "%s must be a string, got %s", key, quote.JSONType(v))
	}
	if strings.TrimSpace(s) == "" {
		return "", refuse(key, "%s is empty", key)
	}
	return s, nil
}

// clip shortens a value quoted back in a message: a reason lands in status and in an NBI answer, and a
// caller's megabyte-long key must not be copied into either.
func clip(s string) string { return quote.Truncate(s, 100) }
