package kopf

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const prPrefix = "provisioningrequests.o2ims.provisioning.oran.org"

// The golden vectors of the brief: what the Python (kopf) operator wrote on real objects.
func TestKeysMatchThePythonOperatorsAnnotations(t *testing.T) {
	n := Namer{Prefix: prPrefix}
	cases := []struct{ name, v1, v2 string }{
		{"last-handled-configuration", "last-ha-a.A3qw", "last-handled-configuration"},
		{"create_fn/sub_validations", "create_-9UaJzw", "create_fn.sub_validations"},
		{"create_fn/sub_creation", "create_-.BW96w", "create_fn.sub_creation"},
		{"create_fn/check_c_status", "create_-Y1OpkA", "create_fn.check_c_status"},
		{"create_fn", "create_fn", "create_fn"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, prPrefix+"/"+c.v1, n.V1(c.name))
			assert.Equal(t, prPrefix+"/"+c.v2, n.V2(c.name))
			keys := n.Keys(c.name)
			assert.Equal(t, prPrefix+"/"+c.v2, keys[0], "V2 is read first")
			if c.v1 != c.v2 {
				assert.Equal(t, []string{prPrefix + "/" + c.v2, prPrefix + "/" + c.v1}, keys)
			} else {
				assert.Len(t, keys, 1, "identical V1 and V2 keys are written once")
			}
		})
	}
}

// Vectors from kopf's own tests/persistence/test_annotations_hashing.py.
func TestKeysMatchKopfsHashingVectors(t *testing.T) {
	n := Namer{Prefix: "my-operator.example.com"}
	p := "my-operator.example.com/"
	v1 := []struct{ in, out string }{
		{"a_b.c-d/e", p + "a_b.c-d.e"},
		{"x", p + "x"},
		{strings.Repeat("x", 39), p + strings.Repeat("x", 39)},
		{strings.Repeat("x", 40), p + strings.Repeat("x", 32) + "-tEokcg"},
		{strings.Repeat("y", 40), p + strings.Repeat("y", 32) + "-VZlvhw"},
		{strings.Repeat("z", 40), p + strings.Repeat("z", 32) + "-LlPQyA"},
		{strings.Repeat("fn", 323), p + strings.Repeat("fn", 16) + "-Az-r.g"},
	}
	for _, c := range v1 {
		assert.Equal(t, c.out, n.V1(c.in), "v1 of %q", c.in)
	}
	v2 := []struct{ in, out string }{
		{"a_b.c-d/e", p + "a_b.c-d.e"},
		{"x", p + "x"},
		{strings.Repeat("x", 63), p + strings.Repeat("x", 63)},
		{strings.Repeat("x", 64), p + strings.Repeat("x", 56) + "-SItAqA"},
		{strings.Repeat("y", 64), p + strings.Repeat("y", 56) + "-0d251g"},
		{strings.Repeat("z", 64), p + strings.Repeat("z", 56) + "-E7wvIA"},
		{strings.Repeat("fn", 323), p + strings.Repeat("fn", 28) + "-Az-r.g"},
	}
	for _, c := range v2 {
		assert.Equal(t, c.out, n.V2(c.in), "v2 of %q", c.in)
	}
}

func TestKeysAreDeduplicatedWhenV1EqualsV2(t *testing.T) {
	n := Namer{Prefix: "kopf.zalando.org"}
	assert.Len(t, n.Keys("..."), 1)
	assert.Len(t, n.Keys(strings.Repeat(".", 64)), 2)
}

func TestProgressRecordsOfBothKopfGenerationsParse(t *testing.T) {
	rec, err := DecodeProgress(`{"started":"2026-11-01T10:00:00.123456","retries":2,"success":false,"failure":false,"message":"waiting","subrefs":["create_fn/sub_validations"]}`)
	if err != nil || *rec.Retries != 2 || *rec.Message != "waiting" || rec.Subrefs[0] != "create_fn/sub_validations" {
		t.Fatalf("kopf 1.36 record: %+v, %v", rec, err)
	}
	for _, s := range []string{"2026-11-01T10:00:00.123456", "2026-11-01T10:00:00.123456+00:00", "2026-11-01T10:00:00Z", "2026-11-01T10:00:00"} {
		got, err := ParseTime(s)
		if err != nil || got.Year() != 2026 || got.Location().String() != "UTC" {
			t.Fatalf("ParseTime(%q) = %v, %v", s, got, err)
		}
	}
	if got := FormatTime(mustTime(t, "2026-11-30T12:00:00+02:00")); got != "2026-11-30T10:00:00.000000" {
		t.Fatalf("FormatTime wrote %q, not kopf 1.36's naive UTC", got)
	}
	for _, bad := range []string{`{`, `[]`, `{"started":"yesterday"}`, `{"retries":-1}`, `{"retries":"2"}`, `{"delayed":"soon"}`} {
		if _, err := DecodeProgress(bad); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
	a, _ := DecodeProgress(`{"retries":1}`)
	b, _ := DecodeProgress(`{"retries": 1}`)
	if !SameProgress(a, b) || SameProgress(a, nil) || !SameProgress(nil, nil) {
		t.Fatal("SameProgress compares stored forms")
	}
}

func TestDiffBaseParsingAndComparison(t *testing.T) {
	if _, found, err := ParseDiffBase(`null`); found || err != nil {
		t.Fatal("null is kopf's none")
	}
	for _, bad := range []string{`{`, `"text"`, `[1]`} {
		if _, _, err := ParseDiffBase(bad); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
	base, _, err := ParseDiffBase(`{"spec":{"n":1},"metadata":{"annotations":{"own.example.com/x":"1","team/y":"2"},"labels":{"a":"b"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	cleared := ClearOwn(base, "own.example.com")
	want := map[string]any{"spec": map[string]any{"n": int64(1)}, "metadata": map[string]any{"annotations": map[string]any{"team/y": "2"}, "labels": map[string]any{"a": "b"}}}
	if !SameEssence(cleared, want) {
		t.Fatalf("cleared %v", cleared)
	}
	if SameEssence(cleared, map[string]any{"spec": map[string]any{"n": 2.0}}) || SameEssence(map[string]any{"a": []any{1}}, map[string]any{"a": []any{1, 2}}) {
		t.Fatal("different essences compared equal")
	}
	if !SameEssence(map[string]any{"a": nil, "b": true, "c": []any{int32(3)}}, map[string]any{"a": nil, "b": true, "c": []any{3.0}}) {
		t.Fatal("JSON-equal essences compared different")
	}
	onlyOwn, _, _ := ParseDiffBase(`{"metadata":{"annotations":{"own.example.com/x":"1"}}}`)
	if len(ClearOwn(onlyOwn, "own.example.com")) != 0 {
		t.Fatal("empty stanzas are removed")
	}
	if got := EncodeDiffBase(map[string]any{"spec": map[string]any{"b": 1, "a": 2}}); got != "{\"spec\":{\"a\":2,\"b\":1}}\n" {
		t.Fatalf("encoded %q", got)
	}
	if m := MarkedPrefixes(map[string]string{"x.example.com/kopf-managed": "yes", "kopf.zalando.org/a": "", "sub.kopf.zalando.org/b": "", "plain": "", "other/c": ""}); len(m) != 3 || m["other"] {
		t.Fatalf("marked %v", m)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
