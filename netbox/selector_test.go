package netbox

import (
	"encoding/json"
	"math"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeSelector(t *testing.T) {
	fields := DefaultFieldNames()
	good := Selector{
		"s": "a100", "b": false, "i": 16, "i8": int8(-3), "u32": uint32(7), "i64": int64(math.MaxInt64),
		"f": float64(32), "f32": float32(2), "n": json.Number("12"), "nf": json.Number("4.0"),
		"uni": "東京 ∑", "big": float64(1 << 53),
	}
	norm, err := normalizeSelector(good, fields)
	require.NoError(t, err)
	assert.Equal(t, selValue{kind: kindString, s: "a100"}, norm["s"])
	assert.Equal(t, selValue{kind: kindBool, b: false}, norm["b"])
	assert.Equal(t, selValue{kind: kindInt, i: 32}, norm["f"])
	assert.Equal(t, selValue{kind: kindInt, i: 4}, norm["nf"])
	assert.Equal(t, selValue{kind: kindInt, i: math.MaxInt64}, norm["i64"])

	bad := []Selector{
		{"f": 1.5}, {"f": math.NaN()}, {"f": math.Inf(1)}, {"f": float64(1 << 54)}, {"u": uint64(math.MaxUint64)},
		{"l": []string{"a"}}, {"m": map[string]any{"value": "a"}}, {"n": nil}, {"e": ""}, {"c": "a\x00b"},
		{"c": "a\nb"}, {"x": strings.Repeat("a", 257)}, {"x": "\xff"}, {"x": json.Number("1e400")},
		{"Upper": 1}, {"": 1}, {"with-dash": 1}, {"sp ace": 1}, {strings.Repeat("k", 51): 1},
		{"o2ims_managed": true}, {"o2ims_request_uid": "x"}, {"o2ims_bmc_address": "x"}, {"o2ims_boot_mac": "x"},
		{"s": struct{}{}},
	}
	for _, sel := range bad {
		_, err := normalizeSelector(sel, fields)
		require.Error(t, err, "%#v", sel)
		assert.True(t, IsKind(err, KindSchema), "%#v", sel)
		assert.NotContains(t, err.Error(), "\n")
	}

	// Reserved keys follow the configured names.
	custom := FieldNames{Managed: "pool", RequestUID: "owner", BMCAddress: "bmc", BootMAC: "mac"}
	_, err = normalizeSelector(Selector{"o2ims_managed": true}, custom)
	assert.NoError(t, err)
	_, err = normalizeSelector(Selector{"owner": "x"}, custom)
	assert.Error(t, err)
}

func TestSelValueMatches(t *testing.T) {
	s := selValue{kind: kindString, s: "a100"}
	assert.True(t, s.matches("a100"))
	assert.True(t, s.matches(map[string]any{"value": "a100", "label": "A100"})) // NetBox 4.7 select
	assert.False(t, s.matches("A100"))
	assert.False(t, s.matches(nil))
	assert.False(t, s.matches(map[string]any{"label": "a100"}))
	i := selValue{kind: kindInt, i: 16}
	assert.True(t, i.matches(float64(16)))
	assert.True(t, i.matches(json.Number("16")))
	assert.False(t, i.matches("16"))
	assert.False(t, i.matches(16.5))
	b := selValue{kind: kindBool, b: true}
	assert.True(t, b.matches(true))
	assert.False(t, b.matches("true"))
	assert.False(t, b.matches(1.0))
}

func TestSanitize(t *testing.T) {
	assert.Equal(t, "a b c", sanitizeText("a\nb\t\u2028c", 100))
	assert.Equal(t, "Token [redacted]", sanitizeText("Token 0123456789abcdef0123", 100))
	assert.Equal(t, "token file is empty", sanitizeText("token file is empty", 100))
	assert.Equal(t, "x [redacted] y", sanitizeText("x nbt_ab12.cd34 y", 100))
	assert.Equal(t, "abc…", sanitizeText("abcdef", 4))
	assert.Equal(t, "bad at [address] and [redacted]", sanitizeMessage("bad at redfish://u:p@10.0.0.1/x and root:calvin@bmc", 100))
	assert.True(t, utf8.ValidString(sanitizeText("a\xffb", 10)))
}

// FuzzSelector: validation never panics, and whatever it accepts encodes to a
// query that decodes back to exactly the filters sent.
func FuzzSelector(f *testing.F) {
	f.Add("gpu_model", "a100", int64(16), 16.0, true)
	f.Add("label", "a&b c=d+e#f?g%20", int64(-1), 1.5, false)
	f.Add("zone", "東京 ∑", int64(0), math.Inf(1), true)
	f.Add("Bad Key", "\x00", int64(math.MaxInt64), float64(1<<53), false)
	f.Add("o2ims_managed", "", int64(0), 0.0, true)
	c := &Client{cfg: Config{Fields: DefaultFieldNames()}}
	f.Fuzz(func(t *testing.T, key, s string, i int64, fl float64, b bool) {
		sel := Selector{key: s, key + "_i": i, key + "_f": fl, key + "_b": b}
		norm, err := normalizeSelector(sel, c.cfg.Fields)
		if err != nil {
			if !IsKind(err, KindSchema) {
				t.Fatalf("want a schema error, got %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err.Error())
			}
			return
		}
		enc := c.deviceFilters(norm).Encode()
		back, err := url.ParseQuery(enc)
		if err != nil {
			t.Fatalf("filters do not parse back: %v", err)
		}
		for k, v := range norm {
			got := back["cf_"+k]
			if len(got) != 1 || got[0] != v.query() {
				t.Fatalf("key %q: sent %q, decoded %q", k, v.query(), got)
			}
			if v.kind == kindString && got[0] != sel[k] {
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
