package kopf

import (
	"testing"
)

// Progress annotations can be written by anyone with patch rights: whatever they hold must neither panic
// nor produce a record that cannot be written back and read again the same.
func FuzzDecodeProgress(f *testing.F) {
	for _, s := range []string{
		`{"started":"2026-11-01T10:00:00.123456","retries":3,"success":false,"failure":false}`,
		`{"started":"2026-11-01T10:00:00+00:00","stopped":"2026-11-01T10:00:05+00:00","success":true,"subrefs":["a/b"]}`,
		`{"started":"2026-12-01T08:49:17.749626+00:00","delayed":"2026-12-01T08:49:33.964126+00:00","purpose":"create","retries":2,"success":false,"failure":false,"message":"None","subrefs":["create_fn/create_fn.<locals>.check_c_status"]}`,
		`{"message":"caf\u00e9 \ud83d\ude00 <&> \u007f"}`,
		`{"retries":-1}`, `{"started":null}`, `[]`, `{`, `null`, `{"message":"\u0000"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		rec, err := DecodeProgress(raw)
		if err != nil {
			return
		}
		if rec.Retries != nil && *rec.Retries < 0 {
			t.Fatalf("negative retries accepted from %q", raw)
		}
		again, err := DecodeProgress(rec.Encode())
		if err != nil {
			t.Fatalf("our own encoding of %q does not decode: %v", raw, err)
		}
		if !SameProgress(rec, again) {
			t.Fatalf("round trip changed the record of %q", raw)
		}
		if again.Encode() != rec.Encode() {
			t.Fatalf("our encoding of %q is not a fixed point", raw)
		}
	})
}

// A diff-base can be anything too: parsing never panics, and what parses survives clearing our own
// annotations, comparison, and a round trip through our own encoding.
func FuzzDiffBase(f *testing.F) {
	for _, s := range []string{`{"spec":{"a":1}}`, `null`, `{"metadata":{"annotations":{"p.example.com/x":"z","o/k":"v"}}}`, `"text"`, `{`, `{"metadata":[]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		base, found, err := ParseDiffBase(raw)
		if err != nil || !found {
			return
		}
		cleared := ClearOwn(base, "p.example.com")
		if !SameEssence(cleared, cleared) {
			t.Fatalf("an essence differs from itself: %q", raw)
		}
		again, found, err := ParseDiffBase(EncodeDiffBase(cleared))
		if err != nil || !found {
			t.Fatalf("our encoding of %q does not parse back: %v", raw, err)
		}
		if !SameEssence(again, cleared) {
			t.Fatalf("round trip changed the essence of %q", raw)
		}
		if enc := EncodeDiffBase(cleared); EncodeDiffBase(again) != enc {
			t.Fatalf("our encoding of %q is not a fixed point: %q", raw, enc)
		}
	})
}
