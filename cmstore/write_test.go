package cmstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGzipJSONReadsBackWhatItWrote(t *testing.T) {
	in := []map[string]any{{"id": "a", "n": 1.0}, {"id": "b", "n": 2.0}}
	raw, err := GzipJSON(in)
	require.NoError(t, err)
	assert.Equal(t, []byte{0x1f, 0x8b}, raw[:2], "gzip, so the state stays small in BinaryData")
	var out []map[string]any
	require.NoError(t, GunzipJSON(raw, &out))
	assert.Equal(t, in, out)
}

func TestGunzipJSONRefusesWhatIsNotGzipJSON(t *testing.T) {
	var out []string
	assert.Error(t, GunzipJSON([]byte(`["plain json"]`), &out), "not gzip")
	raw, err := GzipJSON(map[string]int{"a": 1})
	require.NoError(t, err)
	assert.Error(t, GunzipJSON(raw, &out), "gzip, but not the shape asked for")
}
