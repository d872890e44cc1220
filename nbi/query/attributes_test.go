package query

import (
	"encoding/json"
	"testing"
)

func TestResolveAttr(t *testing.T) {
	for _, c := range []struct {
		path      []string
		kind      AttrKind
		mandatory bool
	}{
		{[]string{"status"}, ObjectAttr, true},
		{[]string{"status", "message"}, SimpleAttr, true},
		{[]string{"provisioningRequestReference"}, SimpleAttr, true},
		{[]string{"provisionedResourceSet", "infrastructureResourceIds"}, SimpleArray, true},
		{[]string{"provisioningRequestData", "templateParameters"}, ObjectAttr, true},
		{[]string{"provisioningRequestData", "templateParameters", "nodes", "name"}, FreeformAttr, false},
	} {
		kind, mandatory, err := ResolveAttr(c.path)
		if err != nil || kind != c.kind || mandatory != c.mandatory {
			t.Errorf("%v: %v %v %v, want %v %v", c.path, kind, mandatory, err, c.kind, c.mandatory)
		}
	}
	_, _, err := ResolveAttr([]string{"status", "phase"})
	wantError(t, err, statusBadRequest, `"status/phase" is not an attribute of ProvisioningRequestInfo (status has updateTime, message, provisioningPhase)`, "status/phase")
	_, _, err = ResolveAttr([]string{"x"})
	wantError(t, err, statusBadRequest, `(ProvisioningRequestInfo has provisioningRequestData, provisioningRequestReference, status, provisionedResourceSet)`, "x")
	_, _, err = ResolveAttr([]string{"provisionedResourceSet", "nodeClusterId", "x"})
	wantError(t, err, statusBadRequest, "provisionedResourceSet/nodeClusterId has no members", "below a simple attribute")
}

func TestSplitAttrPath(t *testing.T) {
	path, err := SplitAttrPath("a/b.c/d")
	equal(t, path, []string{"a", "b.c", "d"}, "a/b.c/d")
	if err != nil {
		t.Error(err)
	}
	_, err = SplitAttrPath("")
	wantError(t, err, statusBadRequest, "an attribute name is empty", `""`)
	_, err = SplitAttrPath("a/")
	wantError(t, err, statusBadRequest, `attribute path "a/" has an empty name`, "a/")
}

func TestInTemplateParameters(t *testing.T) {
	for _, c := range []struct {
		path, below []string
		ok          bool
	}{
		{[]string{"provisioningRequestData", "templateParameters"}, []string{}, true},
		{[]string{"provisioningRequestData", "templateParameters", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"provisioningRequestData", "name"}, nil, false},
		{[]string{"provisioningRequestData"}, nil, false},
		{[]string{"status", "templateParameters"}, nil, false},
	} {
		below, ok := InTemplateParameters(c.path)
		if ok != c.ok {
			t.Errorf("%v: %v, want %v", c.path, ok, c.ok)
		}
		equal(t, below, c.below, "%v", c.path)
	}
}

// The attribute values Filter.Match reads may come as any of the number types an unstructured object or
// a JSON decoder holds, and arrays as []string.
func TestMatchReadsEveryNumberTypeAndStringArrays(t *testing.T) {
	tp := "provisioningRequestData/templateParameters/"
	params := map[string]any{
		"i": 7, "i32": int32(7), "f32": float32(7), "num": json.Number("7"), "bad": json.Number("x"),
		"tags": []string{"a", "b"}, "obj": map[string]any{"k": "v"},
	}
	attrs := map[string]any{"provisioningRequestData": map[string]any{"templateParameters": params}}
	matchesAll(t, attrs, map[string]bool{
		"(eq," + tp + "i,7)":        true,
		"(gt," + tp + "i32,6.5)":    true,
		"(lte," + tp + "f32,7)":     true,
		"(eq," + tp + "num,7.0)":    true,
		"(cont," + tp + "num,7)":    true,
		"(eq," + tp + "bad,x)":      true, // an unreadable json.Number compares as its text
		"(eq," + tp + "tags,b)":     true,
		"(eq," + tp + "tags/x,b)":   false, // below a string there is nothing
		"(cont," + tp + "obj,v)":    false,
		"(gt," + tp + "obj,a)":      false,
		"(lt," + tp + "i,x)":        true, // a value that is not a number compares as a string: "7" < "x"
		"(lt," + tp + "i,NaN)":      true, // NaN is no number to compare with: "7" < "NaN" as strings
		"(cont," + tp + "i32,7)":    true,
		"(ncont," + tp + "tags,c)":  true,
		"(nin," + tp + "tags,a,c)":  false,
		"(gte," + tp + "f32,7.0)":   true,
		"(lt," + tp + "absent,1)":   false,
		"(neq," + tp + "obj/k,v)":   false,
		"(in," + tp + "obj/k,w,v)":  true,
		"(eq," + tp + "tags/0,a)":   false,
		"(eq," + tp + "i32,7e0)":    true,
		"(eq," + tp + "num,7;x)":    false,
		"(cont," + tp + "bad,x)":    true,
		"(gt," + tp + "bad,w)":      true,
		"(lt," + tp + "f32,-1e400)": false, // out of range: as strings, "7" > "-1e400"
	})
}
