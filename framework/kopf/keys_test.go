package kopf

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const prPrefix = "provisioningrequests.o2ims.provisioning.oran.org"

// Golden vectors: the keys the released Python image (kopf 1.40.1) wrote on real objects. Its create_fn
// declares its sub-handlers inside the function, so their ids carry Python's qualified name
// ("create_fn.<locals>.sub_validations"); V2 keeps the whole id (`/` → `.`, `<`/`>` → `_`), V1 cuts the
// whole key to 63 characters and appends the hash.
func TestKeysMatchThePythonImagesAnnotations(t *testing.T) {
	n := Namer{Prefix: prPrefix}
	cases := []struct{ name, v1, v2 string }{
		{"last-handled-configuration", "last-ha-a.A3qw", "last-handled-configuration"},
		{"create_fn/create_fn.<locals>.sub_validations", "create_-FCg65g", "create_fn.create_fn._locals_.sub_validations"},
		{"create_fn/create_fn.<locals>.sub_creation", "create_-1y2VFQ", "create_fn.create_fn._locals_.sub_creation"},
		{"create_fn/create_fn.<locals>.check_c_status", "create_-PCIGzQ", "create_fn.create_fn._locals_.check_c_status"},
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
	rec, err := DecodeProgress(`{"started":"2026-11-01T10:00:00.123456","retries":2,"success":false,"failure":false,"message":"waiting","subrefs":["create_fn/create_fn.<locals>.sub_validations"]}`)
	if err != nil || *rec.Retries != 2 || *rec.Message != "waiting" || rec.Subrefs[0] != "create_fn/create_fn.<locals>.sub_validations" {
		t.Fatalf("kopf 1.36 record: %+v, %v", rec, err)
	}
	for s, form := range map[string]TimeForm{
		"2026-11-01T10:00:00.123456": TimeNaive, "2026-11-01T10:00:00": TimeNaive, "2026-11-01 10:00:00,5": TimeNaive,
		"2026-11-01T10:00:00.123456+00:00": TimeAware, "2026-11-01T10:00:00Z": TimeAware,
		"2026-11-01T12:00:00+02": TimeAware, "2026-11-01T12:00:00.1+0200": TimeAware,
	} {
		got, f, err := ParseTime(s)
		if err != nil || got.Year() != 2026 || got.Hour() != 10 || got.Location().String() != "UTC" || f != form {
			t.Fatalf("ParseTime(%q) = %v, %v, %v", s, got, f, err)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-11-01", "2026-11-01T10:00", "2026-11-01T10:00:00.", "2026-11-01T10:00:00+2", "2026-11-01T10:00:00 UTC", "2026-13-01T10:00:00"} {
		if _, _, err := ParseTime(bad); err == nil {
			t.Fatalf("ParseTime accepted %q", bad)
		}
	}
	at := mustTime(t, "2026-11-30T12:00:00.1234567+02:00")
	assert.Equal(t, "2026-11-30T10:00:00.123456+00:00", FormatTime(at, TimeAware), "kopf >= 1.37: aware UTC, microseconds")
	assert.Equal(t, "2026-11-30T10:00:00.123456", FormatTime(at, TimeNaive), "kopf 1.36: naive UTC")
	assert.Equal(t, "2026-11-30T10:00:00.000000+00:00", FormatTime(mustTime(t, "2026-11-30T10:00:00Z"), TimeAware), "six digits always (timespec='microseconds')")
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
	if _, ok := a.TimeForm(); ok {
		t.Fatal("a record without times has no form")
	}
}

func TestTimeFormSetting(t *testing.T) {
	for v, want := range map[string]TimeForm{"": TimeAware, "aware": TimeAware, " Naive ": TimeNaive} {
		got, err := ParseTimeForm(v)
		assert.NoError(t, err, v)
		assert.Equal(t, want, got, v)
	}
	_, err := ParseTimeForm("1.36")
	assert.ErrorContains(t, err, `KOPF_TIME_FORMAT must be "aware"`)
	assert.Equal(t, "naive", TimeNaive.String())
	assert.Equal(t, "aware", TimeAware.String())
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
