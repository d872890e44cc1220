package framework

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Progress and diff-base annotations can be written by anyone with patch rights: whatever they hold must
// neither panic nor produce a state that cannot be written back.
func FuzzDecodeProgress(f *testing.F) {
	for _, s := range []string{
		`{"started":"2026-11-01T10:00:00.123456","retries":3,"success":false,"failure":false}`,
		`{"started":"2026-11-01T10:00:00+00:00","stopped":"2026-11-01T10:00:05+00:00","success":true,"subrefs":["a/b"]}`,
		`{"retries":-1}`, `{"started":null}`, `[]`, `{`, `null`, `{"message":"\u0000"}`,
	} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		hs, err := decodeProgress(raw, now)
		if err != nil {
			return
		}
		if hs.retries < 0 {
			t.Fatalf("negative retries accepted from %q", raw)
		}
		again, err := decodeProgress(encodeProgress(hs.record()), now)
		if err != nil {
			t.Fatalf("our own encoding of %q does not decode: %v", raw, err)
		}
		if !sameRecord(hs.record(), again.record()) {
			t.Fatalf("round trip changed the record of %q", raw)
		}
	})
}

func FuzzDiffBase(f *testing.F) {
	for _, s := range []string{`{"spec":{"a":1}}`, `null`, `{"metadata":{"annotations":{"x/y":"z"}}}`, `"text"`, `{`} {
		f.Add(s)
	}
	n := keyNamer{prefix: "p.example.com"}
	f.Fuzz(func(t *testing.T, raw string) {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"a": int64(1)}}}
		u.SetAnnotations(map[string]string{n.v2(diffBaseName): raw})
		base, _, err := fetchDiffBase(u, n.keys(diffBaseName))
		if err != nil || base == nil {
			return
		}
		_ = sameEssence(clearOwn(base, n.prefix), essence(u, n.prefix))
	})
}
