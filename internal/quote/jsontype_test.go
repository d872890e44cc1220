package quote

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJSONTypeNamesWhatADecoderHolds(t *testing.T) {
	for v, want := range map[any]string{
		"s": "a string", true: "a boolean", int64(1): "a number", 1.5: "a number", 3: "a number",
		int32(3): "a number", float32(2): "a number", json.Number("7"): "a number", struct{}{}: "struct {}",
	} {
		assert.Equal(t, want, JSONType(v), "%#v", v)
	}
	assert.Equal(t, "null", JSONType(nil))
	assert.Equal(t, "a list", JSONType([]any{}))
	assert.Equal(t, "an object", JSONType(map[string]any{}))
}
