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
)

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
// The error is the reason shown in "Provisioning request validation failed; reason: …".
func Parse(spec map[string]any, reserved map[string]bool) (Request, error) {
	var r Request
	if spec == nil {
		return r, fmt.Errorf("spec is missing")
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
		return r, fmt.Errorf("templateParameters is missing")
	}
	params, ok := raw.(map[string]any)
	if !ok {
		return r, fmt.Errorf("templateParameters must be an object, got %s", jsonType(raw))
	}
	cn, ok := params["clusterName"]
	if !ok || cn == nil {
		return r, fmt.Errorf("clusterName is missing in template parameters")
	}
	if r.ClusterName, ok = cn.(string); !ok {
		return r, fmt.Errorf("clusterName must be a string, got %s", jsonType(cn))
	}
	// The name becomes a Cluster's name and a Porch package's: a DNS-1123 subdomain.
	if errs := validation.IsDNS1123Subdomain(r.ClusterName); len(errs) > 0 {
		return r, fmt.Errorf("clusterName %q is not a valid name: %s", r.ClusterName, strings.Join(errs, "; "))
	}
	if lr, present := params["labels"]; present && lr != nil {
		lm, ok := lr.(map[string]any)
		if !ok {
			return r, fmt.Errorf("labels must be an object, got %s", jsonType(lr))
		}
		r.Labels = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(lm)) {
			v, ok := lm[k].(string)
			if !ok {
				return r, fmt.Errorf("labels.%s must be a string, got %s", k, jsonType(lm[k]))
			}
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return r, fmt.Errorf("labels key %q is not a valid label key: %s", k, strings.Join(errs, "; "))
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return r, fmt.Errorf("labels.%s value %q is not a valid label value: %s", k, v, strings.Join(errs, "; "))
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
		return nil, fmt.Errorf("hosts must be a list, got %s", jsonType(raw))
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("hosts must not be empty when given")
	}
	seen := map[string]bool{}
	out := make([]HostRequest, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("hosts[%d] must be an object, got %s", i, jsonType(e))
		}
		for k := range m {
			if k != "role" && k != "count" && k != "selector" {
				return nil, fmt.Errorf("hosts[%d] has an unknown field %q (role, count, selector)", i, k)
			}
		}
		role, ok := m["role"].(string)
		if !ok || role == "" {
			return nil, fmt.Errorf("hosts[%d].role is missing", i)
		}
		if errs := validation.IsDNS1123Label(role); len(errs) > 0 {
			return nil, fmt.Errorf("hosts[%d].role %q is not a DNS-1123 label: %s", i, role, strings.Join(errs, "; "))
		}
		if seen[role] {
			return nil, fmt.Errorf("hosts[%d].role %q is used twice; roles must be unique", i, role)
		}
		seen[role] = true
		count, err := wholeNumber(m["count"])
		if err != nil {
			return nil, fmt.Errorf("hosts[%d].count %v", i, err)
		}
		if count < 1 {
			return nil, fmt.Errorf("hosts[%d].count must be at least 1, got %d", i, count)
		}
		sel := map[string]any{}
		if sr, present := m["selector"]; present && sr != nil {
			sm, ok := sr.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("hosts[%d].selector must be an object, got %s", i, jsonType(sr))
			}
			for _, k := range slices.Sorted(maps.Keys(sm)) {
				if reserved[k] {
					return nil, fmt.Errorf("hosts[%d].selector key %q is reserved for the inventory's own bookkeeping", i, k)
				}
				v, err := scalar(sm[k])
				if err != nil {
					return nil, fmt.Errorf("hosts[%d].selector.%s %v", i, k, err)
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
		return nil, fmt.Errorf("must be a string, boolean or whole number, got %s", jsonType(v))
	}
}

func wholeNumber(v any) (int, error) {
	switch t := v.(type) {
	case int64:
		return int(t), nil
	case int:
		return t, nil
	case float64:
		if t != math.Trunc(t) || t > math.MaxInt32 || t < math.MinInt32 {
			return 0, fmt.Errorf("must be a whole number, got %v", t)
		}
		return int(t), nil
	case nil:
		return 0, fmt.Errorf("is missing")
	default:
		return 0, fmt.Errorf("must be a whole number, got %s", jsonType(v))
	}
}

func requiredString(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", fmt.Errorf("%s is missing", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string, got %s", key, jsonType(v))
	}
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%s is empty", key)
	}
	return s, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, float32, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
