package kopf

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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

// Whatever a string holds, our Python-style encoding of it is ASCII-only JSON that decodes back to the
// same string (invalid UTF-8 as U+FFFD, as any JSON encoder must), and of a time, the form it was read in.
func FuzzPythonStrings(f *testing.F) {
	for _, s := range []string{"", "create_fn.<locals>.x", "café 😀", "\x00\x7f\u2028", "\xff", `"\`, "2026-12-01T08:49:17.749626+00:00", "2026-12-01 08:49:17,5-0230", "2026-12-01T08:49:17"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		writePyString(&b, s)
		out := b.String()
		for i := 0; i < len(out); i++ {
			if out[i] < 0x20 || out[i] > 0x7e {
				t.Fatalf("non-printable-ASCII byte %#x in %q", out[i], out)
			}
		}
		var back string
		if err := json.Unmarshal([]byte(out), &back); err != nil {
			t.Fatalf("%q encodes to invalid JSON %q: %v", s, out, err)
		}
		var want strings.Builder
		for _, r := range s { // one U+FFFD per invalid byte, as ranging over the string gives
			want.WriteRune(r)
		}
		if back != want.String() {
			t.Fatalf("%q encodes to %q, which decodes to %q", s, out, back)
		}
		if strings.Contains(s, "<") && !strings.Contains(out, "<") {
			t.Fatalf("< escaped in %q", out)
		}
		if tm, form, err := ParseTime(s); err == nil {
			if again, form2, err := ParseTime(FormatTime(tm, form)); err != nil || form2 != form || !again.Equal(tm.Truncate(time.Microsecond)) {
				t.Fatalf("time %q: formatted %q reads %v %v %v", s, FormatTime(tm, form), again, form2, err)
			}
		}
	})
}
