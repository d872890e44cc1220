package query

import (
	"testing"
)

func TestParseFilter(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Filter
	}{
		{"(eq,status/provisioningPhase,FULFILLED)", Filter{{"eq", []string{"status", "provisioningPhase"}, []string{"FULFILLED"}}}},
		{"(eq,provisioningRequestData/templateParameters/clusterName,edge-1);(neq,status/message,)", Filter{
			{"eq", []string{"provisioningRequestData", "templateParameters", "clusterName"}, []string{"edge-1"}},
			{"neq", []string{"status", "message"}, []string{""}},
		}},
		{"(in,status/provisioningPhase,FAILED,PENDING)", Filter{{"in", []string{"status", "provisioningPhase"}, []string{"FAILED", "PENDING"}}}},
		{"(cont,status/message,'a,b','it''s',')')", Filter{{"cont", []string{"status", "message"}, []string{"a,b", "it's", ")"}}}},
		{"(eq,provisioningRequestData/name,'')", Filter{{"eq", []string{"provisioningRequestData", "name"}, []string{""}}}},
		{"(eq,provisioningRequestData/name,a;b)", Filter{{"eq", []string{"provisioningRequestData", "name"}, []string{"a;b"}}}},
		{"(gte,provisionedResourceSet/infrastructureResourceIds,host)", Filter{{"gte", []string{"provisionedResourceSet", "infrastructureResourceIds"}, []string{"host"}}}},
		{"(eq,provisioningRequestData/templateParameters/a-b.c/d,x)", Filter{{"eq", []string{"provisioningRequestData", "templateParameters", "a-b.c", "d"}, []string{"x"}}}},
	} {
		got, err := ParseFilter(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		equal(t, got, c.want, "%s", c.in)
		again, err := ParseFilter(got.String())
		if err != nil {
			t.Errorf("%s: %v", got.String(), err)
			continue
		}
		equal(t, again, got, "rendered as %s", got.String())
	}
}

func TestParseFilterErrorsSayWhatIsWrong(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "empty",
		"eq,status/message,x":              "expected '('",
		"(eq,status/message,x":             "not closed",
		"(eq,status/message)":              "expected ',' and a value",
		"(like,status/message,x)":          `unknown operator "like"`,
		"(eq,status/message,x,y)":          `"eq" takes exactly one value`,
		"(eq,status/nope,x)":               `"status/nope" is not an attribute`,
		"(eq,nope,x)":                      `"nope" is not an attribute`,
		"(eq,status,x)":                    "is an object",
		"(eq,status//message,x)":           "empty name",
		"(eq,status/message/deeper,x)":     "has no members",
		"(eq,status/message,it's)":         "must be quoted",
		"(eq,status/message,'x'y)":         "after a quoted value",
		"(eq,status/message,'x)":           "not closed",
		"(eq,status/message,x)(eq,name,y)": "expected ';'",
		"(eq,status/message,x);":           "expected '('",
		"(eq)":                             "expected ',' after the operator",
		"(eq,provisioningRequestData/templateParameters/a(b,x)": "may not contain",
	} {
		f, err := ParseFilter(in)
		wantError(t, err, statusBadRequest, want, "%s", in)
		if f != nil {
			t.Errorf("%s: a refused filter is %v, want nil", in, f)
		}
	}
}

// edge7 is the Info of a fulfilled request as package nbi hands it to Filter.Match (its attributes()).
func edge7() map[string]any {
	return map[string]any{
		"provisioningRequestData": map[string]any{
			"provisioningRequestId": "edge-7",
			"name":                  "Edge Seven",
			"description":           "",
			"templateName":          "nephio-workload-cluster",
			"templateVersion":       "v3.0.0",
			"templateParameters": map[string]any{
				"clusterName": "edge-7", "replicas": int64(3), "ratio": 0.5, "ha": true, "big": int64(9007199254740993),
				"nodes":   []any{map[string]any{"name": "n1", "cpu": int64(4)}, map[string]any{"name": "n2", "cpu": int64(16)}},
				"labels":  map[string]any{"site": "berlin"},
				"nothing": nil,
			},
		},
		"provisioningRequestReference": "uid-edge-7",
		"status": map[string]any{
			"updateTime":        "2026-11-30T10:00:00Z",
			"message":           "Cluster resource created",
			"provisioningPhase": "FULFILLED",
		},
		"provisionedResourceSet": map[string]any{
			"nodeClusterId":             "uid-c",
			"infrastructureResourceIds": []any{"host-a", "host-b"},
		},
	}
}

func TestFilterEvaluation(t *testing.T) {
	attrs := edge7()
	tp := "provisioningRequestData/templateParameters/"
	matchesAll(t, attrs, map[string]bool{
		"(eq,status/provisioningPhase,FULFILLED)":                                   true,
		"(eq,status/provisioningPhase,fulfilled)":                                   false,
		"(neq,status/provisioningPhase,FAILED)":                                     true,
		"(in,status/provisioningPhase,FAILED,FULFILLED)":                            true,
		"(nin,status/provisioningPhase,FAILED,FULFILLED)":                           false,
		"(cont,status/message,resource)":                                            true,
		"(cont,status/message,nope,created)":                                        true,
		"(ncont,status/message,nope,created)":                                       false,
		"(ncont,status/message,nope)":                                               true,
		"(eq,provisioningRequestData/provisioningRequestId,edge-7)":                 true,
		"(gt,status/updateTime,2026-11-30T09:00:00Z)":                               true,
		"(lt,status/updateTime,2026-11-30T09:00:00Z)":                               false,
		"(lte,status/updateTime,2026-11-30T10:00:00Z)":                              true,
		"(gte,status/updateTime,2026-11-30T10:00:01Z)":                              false,
		"(eq," + tp + "replicas,3)":                                                 true,
		"(eq," + tp + "replicas,3.0)":                                               true,
		"(gt," + tp + "replicas,10)":                                                false, // numerically, not "3" > "10"
		"(lt," + tp + "replicas,10)":                                                true,
		"(gt," + tp + "ratio,0.25)":                                                 true,
		"(eq," + tp + "big,9007199254740993)":                                       true,
		"(gt," + tp + "big,9007199254740992)":                                       true, // exact beyond 2^53
		"(eq," + tp + "ha,true)":                                                    true,
		"(cont," + tp + "replicas,3)":                                               true,
		"(gt," + tp + "clusterName,edge-10)":                                        true, // strings order as strings
		"(eq," + tp + "nodes/name,n2)":                                              true, // through an array: any element
		"(gt," + tp + "nodes/cpu,8)":                                                true,
		"(gt," + tp + "nodes/cpu,16)":                                               false,
		"(neq," + tp + "nodes/name,n2)":                                             false, // no element is n2? false
		"(neq," + tp + "nodes/name,n3)":                                             true,
		"(eq,provisionedResourceSet/infrastructureResourceIds,host-b)":              true,
		"(nin,provisionedResourceSet/infrastructureResourceIds,host-a,host-c)":      false,
		"(eq," + tp + "labels/site,berlin)":                                         true,
		"(eq," + tp + "labels,berlin)":                                              false, // an object matches nothing
		"(eq," + tp + "absent,x)":                                                   false,
		"(neq," + tp + "absent,x)":                                                  true, // the negation of eq
		"(eq," + tp + "nothing,null)":                                               false,
		"(eq,status/provisioningPhase,FULFILLED);(eq," + tp + "clusterName,edge-7)": true,
		"(eq,status/provisioningPhase,FULFILLED);(eq," + tp + "clusterName,edge-8)": false,
		"(eq,provisioningRequestData/name,Edge Seven)":                              true,
	})
}

// matchesAll parses each expression and checks whether it matches attrs, given as maps and as a Tree
// (every object of it answering its own members): both forms must match alike.
func matchesAll(t *testing.T, attrs map[string]any, cases map[string]bool) {
	t.Helper()
	for expr, want := range cases {
		f, err := ParseFilter(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := f.Match(attrs); got != want {
			t.Errorf("%s: matched %v, want %v", expr, got, want)
		}
		if got := f.Match(mapTree(attrs)); got != want {
			t.Errorf("%s: as a Tree, matched %v, want %v", expr, got, want)
		}
	}
}

// mapTree is a map answering as a Tree, its objects (also inside arrays) as Trees too.
type mapTree map[string]any

func (m mapTree) Child(name string) (any, bool) {
	v, ok := m[name]
	return asTree(v), ok
}

func asTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return mapTree(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = asTree(e)
		}
		return out
	}
	return v
}
