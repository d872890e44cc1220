package kopf

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Golden vectors: what the released Python image (kopf 1.40.1) wrote on a request it had in flight
// (kopf-observed.md; the create_fn record verbatim, the sub-handler records in the same shape with their
// times filled in). Reading them and writing them back must give the same bytes, so an object passing
// through us is, to the Python image, as it left it.
var pythonImageRecords = map[string]string{
	"create_fn": `{"started":"2026-12-01T08:49:17.749626+00:00","delayed":"2026-12-01T08:49:33.964126+00:00",` +
		`"purpose":"create","retries":2,"success":false,"failure":false,"message":"None",` +
		`"subrefs":["create_fn/create_fn.<locals>.check_c_status","create_fn/create_fn.<locals>.sub_creation",` +
		`"create_fn/create_fn.<locals>.sub_validations"]}`,
	"create_fn/create_fn.<locals>.sub_validations": `{"started":"2026-12-01T08:49:17.750115+00:00","stopped":"2026-12-01T08:49:17.762410+00:00","purpose":"create","retries":1,"success":true,"failure":false}`,
	"create_fn/create_fn.<locals>.sub_creation":    `{"started":"2026-12-01T08:49:17.762804+00:00","stopped":"2026-12-01T08:49:17.951327+00:00","purpose":"create","retries":1,"success":true,"failure":false}`,
	"create_fn/create_fn.<locals>.check_c_status":  `{"started":"2026-12-01T08:49:17.951702+00:00","purpose":"create","retries":0,"success":false,"failure":false}`,
}

func TestPythonImageRecordsRoundTripByteForByte(t *testing.T) {
	for id, raw := range pythonImageRecords {
		rec, err := DecodeProgress(raw)
		require.NoError(t, err, id)
		assert.Equal(t, raw, rec.Encode(), "%s: re-encoded differently", id)
		form, ok := rec.TimeForm()
		assert.True(t, ok)
		assert.Equal(t, TimeAware, form, "%s: kopf 1.40.1 writes aware times", id)
	}
	rec, _ := DecodeProgress(pythonImageRecords["create_fn"])
	assert.Equal(t, []string{
		"create_fn/create_fn.<locals>.check_c_status", "create_fn/create_fn.<locals>.sub_creation", "create_fn/create_fn.<locals>.sub_validations",
	}, rec.Subrefs)
	assert.NotContains(t, rec.Encode(), `\u003c`, "subrefs are written as kopf writes them, not HTML-escaped")
}

// The diff-base kopf writes for a request (spec plus labels): json.dumps over an essence whose "metadata"
// comes after the body's own fields, labels before annotations, keys within as the API server serves
// them (sorted), non-ASCII escaped, and a trailing newline.
func TestDiffBaseIsWrittenAsKopfWritesIt(t *testing.T) {
	golden := `{"spec":{"description":"Caf\u00e9 <edge> & lab","name":"edge 1","templateName":"nephio-workload-cluster",` +
		`"templateParameters":{"clusterName":"edge-1","hosts":[{"count":2,"role":"worker","selector":{"ratio":0.5}}]},` +
		`"templateVersion":"v3.0.0"},"metadata":{"labels":{"site":"lab-3"},"annotations":{"team.example.com/owner":"ran"}}}` + "\n"
	essence := map[string]any{
		"spec": map[string]any{
			"templateVersion": "v3.0.0", "templateName": "nephio-workload-cluster", "name": "edge 1",
			"description": "Café <edge> & lab",
			"templateParameters": map[string]any{"clusterName": "edge-1", "hosts": []any{
				map[string]any{"role": "worker", "count": int64(2), "selector": map[string]any{"ratio": 0.5}},
			}},
		},
		"metadata": map[string]any{"annotations": map[string]any{"team.example.com/owner": "ran"}, "labels": map[string]any{"site": "lab-3"}},
	}
	assert.Equal(t, golden, EncodeDiffBase(essence), "an essence from the object")

	parsed, found, err := ParseDiffBase(golden)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, golden, EncodeDiffBase(parsed), "read back and written again")
	assert.True(t, SameEssence(parsed, essence))

	// The Python image's diff-base on a fulfilled request, under both keys (kopf-observed.md).
	py := `{"spec":{"description":"test request","name":"edge python-1","templateName":"edge-cluster","templateParameters":{"clusterName":"edge-python-1"},"templateVersion":"v1.0.0"}}` + "\n"
	parsed, _, err = ParseDiffBase(py)
	require.NoError(t, err)
	assert.Equal(t, py, EncodeDiffBase(parsed))
}

// Python's json.dumps(ensure_ascii=True) for strings and its repr for floats.
func TestPythonJSONEncoding(t *testing.T) {
	strs := map[string]string{
		"plain":                    `"plain"`,
		"create_fn.<locals>.x":     `"create_fn.<locals>.x"`,
		"a&b":                      `"a&b"`,
		"quote\" back\\ slash/":    `"quote\" back\\ slash/"`,
		"\n\r\t\b\f\x00\x1f\x7f":   `"\n\r\t\b\f\u0000\u001f\u007f"`,
		"café":                     `"caf\u00e9"`,
		"😀":                        `"\ud83d\ude00"`,
		"\u2028\u2029":             `"\u2028\u2029"`,
		"bad \xff utf8":            `"bad \ufffd utf8"`,
		"ÄÖÜ ß 日本":                 `"\u00c4\u00d6\u00dc \u00df \u65e5\u672c"`,
		"tab\tand <script>&amp;</": `"tab\tand <script>&amp;</"`,
	}
	for in, want := range strs {
		var b strings.Builder
		writePyString(&b, in)
		assert.Equal(t, want, b.String(), "%q", in)
	}
	floats := map[float64]string{
		1.0: "1.0", 0.5: "0.5", math.Copysign(0, -1): "-0.0", 1e16: "1e+16", 1e15: "1000000000000000.0", 1.5e-05: "1.5e-05",
		0.0001: "0.0001", 123.456: "123.456", 1e22: "1e+22", 2.5e-300: "2.5e-300", -7.25: "-7.25",
	}
	for f, want := range floats {
		assert.Equal(t, want, pyFloat(f), "%v", f)
	}
}
