package selector

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// reserved are the default fixed fields of package netbox.
var reserved = map[string]bool{"o2ims_managed": true, "o2ims_request_uid": true, "o2ims_bmc_address": true, "o2ims_boot_mac": true}

func TestNormalize(t *testing.T) {
	good := Selector{
		"s": "a100", "b": false, "i": 16, "i8": int8(-3), "i16": int16(300), "i32": int32(-70000), "i64": int64(math.MaxInt64),
		"u": uint(1), "u8": uint8(255), "u16": uint16(2), "u32": uint32(7), "u64": uint64(math.MaxInt64),
		"f": float64(32), "f32": float32(2), "n": json.Number("12"), "nf": json.Number("4.0"),
		"uni": "東京 ∑", "big": float64(1 << 53), "neg": float64(-(1 << 53)),
	}
	norm, err := Normalize(good, reserved)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]Value{
		"s": {kind: KindString, s: "a100"}, "b": {kind: KindBool, b: false}, "i": {kind: KindInt, i: 16},
		"i8": {kind: KindInt, i: -3}, "i16": {kind: KindInt, i: 300}, "i32": {kind: KindInt, i: -70000},
		"i64": {kind: KindInt, i: math.MaxInt64}, "u": {kind: KindInt, i: 1}, "u8": {kind: KindInt, i: 255},
		"u16": {kind: KindInt, i: 2}, "u32": {kind: KindInt, i: 7}, "u64": {kind: KindInt, i: math.MaxInt64},
		"f": {kind: KindInt, i: 32}, "f32": {kind: KindInt, i: 2}, "n": {kind: KindInt, i: 12}, "nf": {kind: KindInt, i: 4},
		"uni": {kind: KindString, s: "東京 ∑"}, "big": {kind: KindInt, i: 1 << 53}, "neg": {kind: KindInt, i: -(1 << 53)},
	} {
		if norm[k] != want {
			t.Errorf("%s: %+v, want %+v", k, norm[k], want)
		}
	}
	if len(norm) != len(good) {
		t.Errorf("%d values of %d", len(norm), len(good))
	}

	for _, c := range []struct {
		sel  Selector
		want string
	}{
		{Selector{"f": 1.5}, "selector key f: number must be an integer"},
		{Selector{"f": math.NaN()}, "number must be an integer"},
		{Selector{"f": math.Inf(1)}, "number must be an integer"},
		{Selector{"f": float64(1 << 54)}, "selector key f: integer out of range"},
		{Selector{"u": uint64(math.MaxUint64)}, "selector key u: integer out of range"},
		{Selector{"l": []string{"a"}}, "selector key l: []string is not a scalar (string, boolean or integer)"},
		{Selector{"m": map[string]any{"value": "a"}}, "is not a scalar"},
		{Selector{"s": struct{}{}}, "struct {} is not a scalar"},
		{Selector{"n": nil}, "selector key n: null is not a scalar value"},
		{Selector{"e": ""}, "selector key e: empty string (NetBox ignores an empty filter)"},
		{Selector{"c": "a\x00b"}, "selector key c: string value holds control characters"},
		{Selector{"c": "a\nb"}, "control characters"},
		{Selector{"x": strings.Repeat("a", 257)}, "selector key x: string value must be valid UTF-8 of at most 256 bytes"},
		{Selector{"x": "\xff"}, "must be valid UTF-8"},
		{Selector{"x": json.Number("1e400")}, "selector key x: not a number"},
		{Selector{"x": json.Number("1.5")}, "number must be an integer"},
		{Selector{"Upper": 1}, `selector key "Upper" is not a NetBox custom field name (lowercase letters, digits, underscores)`},
		{Selector{"": 1}, `selector key "" is not`},
		{Selector{"with-dash": 1}, `selector key "with-dash" is not`},
		{Selector{"sp ace": 1}, `selector key "sp ace" is not`},
		{Selector{"a\nb": 1}, `selector key "a\nb" is not`},
		{Selector{strings.Repeat("k", 51): 1}, "is not a NetBox custom field name"},
		{Selector{strings.Repeat("ü", 70): 1}, `selector key "` + strings.Repeat("ü", 59) + `…" is not`},
		{Selector{"o2ims_managed": true}, "selector key o2ims_managed is reserved for the inventory itself"},
		{Selector{"o2ims_request_uid": "x"}, "is reserved"},
		{Selector{"o2ims_bmc_address": "x"}, "is reserved"},
		{Selector{"o2ims_boot_mac": "x"}, "is reserved"},
		{Selector{"a": 1.5, "b": 2.5}, "selector key a:"}, // the first key in sorted order
	} {
		norm, err := Normalize(c.sel, reserved)
		var e *Error
		switch {
		case err == nil:
			t.Errorf("%#v: accepted as %v", c.sel, norm)
		case !errors.As(err, &e):
			t.Errorf("%#v: %T is not an *Error", c.sel, err)
		case !strings.Contains(e.Error(), c.want) || e.Error() != e.Message:
			t.Errorf("%#v: %q, want it to contain %q", c.sel, e.Error(), c.want)
		case strings.Contains(e.Error(), "\n"):
			t.Errorf("%#v: multi-line error %q", c.sel, e.Error())
		case norm != nil:
			t.Errorf("%#v: refused, yet %v", c.sel, norm)
		}
	}

	// The reserved keys are the caller's.
	if _, err := Normalize(Selector{"o2ims_managed": true}, map[string]bool{"pool": true}); err != nil {
		t.Error(err)
	}
	if _, err := Normalize(Selector{"pool": "x"}, map[string]bool{"pool": true}); err == nil {
		t.Error("a reserved key accepted")
	}
	if norm, err := Normalize(nil, reserved); err != nil || len(norm) != 0 {
		t.Errorf("an empty selector: %v, %v", norm, err)
	}
}

func TestIsFieldName(t *testing.T) {
	for name, want := range map[string]bool{
		"gpu_model": true, "a": true, "0_9": true, strings.Repeat("k", 50): true,
		"": false, "Upper": false, "with-dash": false, "sp ace": false, "ü": false, strings.Repeat("k", 51): false,
	} {
		if got := IsFieldName(name); got != want {
			t.Errorf("%q: %v, want %v", name, got, want)
		}
	}
}

func TestValueMatches(t *testing.T) {
	s := Value{kind: KindString, s: "a100"}
	i := Value{kind: KindInt, i: 16}
	b := Value{kind: KindBool, b: true}
	for _, c := range []struct {
		v    Value
		got  any
		want bool
	}{
		{s, "a100", true},
		{s, map[string]any{"value": "a100", "label": "A100"}, true}, // NetBox 4.7 select
		{s, "A100", false},
		{s, nil, false},
		{s, map[string]any{"label": "a100"}, false},
		{s, 1.0, false},
		{i, float64(16), true},
		{i, json.Number("16"), true},
		{i, int64(16), true},
		{i, 16, true},
		{i, "16", false},
		{i, 16.5, false},
		{i, math.Inf(1), false},
		{i, float64(1 << 54), false},
		{i, json.Number("16.0"), false},
		{i, float64(17), false},
		{b, true, true},
		{b, false, false},
		{b, "true", false},
		{b, 1.0, false},
	} {
		if got := c.v.Matches(c.got); got != c.want {
			t.Errorf("%+v matches %#v: %v, want %v", c.v, c.got, got, c.want)
		}
	}
}

func TestQueryAndKind(t *testing.T) {
	for _, c := range []struct {
		v           Value
		query, kind string
	}{
		{Value{kind: KindString, s: "a&b c"}, "a&b c", "a string"},
		{Value{kind: KindInt, i: -3}, "-3", "an integer"},
		{Value{kind: KindBool, b: false}, "false", "a boolean"},
	} {
		if c.v.Query() != c.query || c.v.Kind().String() != c.kind {
			t.Errorf("%+v: %q %q, want %q %q", c.v, c.v.Query(), c.v.Kind(), c.query, c.kind)
		}
	}
	if Kind(0).String() != "unknown" {
		t.Errorf("Kind(0) is %q", Kind(0))
	}
}

func TestFilters(t *testing.T) {
	norm, err := Normalize(Selector{"label": "a&b c=d+e#f?g%20", "cores": -3, "sriov": true}, reserved)
	if err != nil {
		t.Fatal(err)
	}
	got := Filters("pool", "owner", norm)
	want := url.Values{
		"cf_pool": {"true"}, "cf_owner__empty": {"true"},
		"cf_label": {"a&b c=d+e#f?g%20"}, "cf_cores": {"-3"}, "cf_sriov": {"true"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	back, err := url.ParseQuery(got.Encode())
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Errorf("%q decodes to %v (%v)", got.Encode(), back, err)
	}
}

// FuzzSelector: validation never panics, and whatever it accepts encodes to a
// query that decodes back to exactly the filters sent.
func FuzzSelector(f *testing.F) {
	f.Add("gpu_model", "a100", int64(16), 16.0, true)
	f.Add("label", "a&b c=d+e#f?g%20", int64(-1), 1.5, false)
	f.Add("zone", "東京 ∑", int64(0), math.Inf(1), true)
	f.Add("Bad Key", "\x00", int64(math.MaxInt64), float64(1<<53), false)
	f.Add("o2ims_managed", "", int64(0), 0.0, true)
	f.Fuzz(func(t *testing.T, key, s string, i int64, fl float64, b bool) {
		sel := Selector{key: s, key + "_i": i, key + "_f": fl, key + "_b": b}
		norm, err := Normalize(sel, reserved)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want a *selector.Error, got %T %v", err, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err.Error())
			}
			return
		}
		enc := Filters("o2ims_managed", "o2ims_request_uid", norm).Encode()
		back, err := url.ParseQuery(enc)
		if err != nil {
			t.Fatalf("filters do not parse back: %v", err)
		}
		for k, v := range norm {
			got := back["cf_"+k]
			if len(got) != 1 || got[0] != v.Query() {
				t.Fatalf("key %q: sent %q, decoded %q", k, v.Query(), got)
			}
			if v.Kind() == KindString && got[0] != sel[k] {
				t.Fatalf("string value altered: %q → %q", sel[k], got[0])
			}
		}
		if back.Get("cf_o2ims_managed") != "true" || back.Get("cf_o2ims_request_uid__empty") != "true" {
			t.Fatalf("fixed filters missing or overridden: %v", back)
		}
		if len(back) != len(norm)+2 {
			t.Fatalf("unexpected parameters: %v", back)
		}
	})
}
