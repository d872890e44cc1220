package cmstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

type decodedState struct {
	Version
	n int // which decode made it
}

// A State decodes each resourceVersion once, and a read of an older copy (a slow one, or a cache behind
// this replica's write) never replaces the newer state it keeps.
func TestAStateIsDecodedOncePerVersionAndKeepsTheNewest(t *testing.T) {
	decodes := 0
	s := NewState(New(nil, "ns", "l"), nil, Codec[*decodedState]{Decode: func(*corev1.ConfigMap) (*decodedState, error) {
		decodes++
		return &decodedState{n: decodes}, nil
	}})
	a, err := s.decoded(cm("x", "5"))
	require.NoError(t, err)
	b, err := s.decoded(cm("x", "5"))
	require.NoError(t, err)
	assert.Same(t, a, b)
	assert.Equal(t, 1, decodes)
	assert.Equal(t, Version{rv: "5", stored: true}, a.Version, "read at 5, stored")

	written := &decodedState{Version: Version{rv: "12", stored: true}}
	s.remember(written)
	older, err := s.decoded(cm("x", "9"))
	require.NoError(t, err)
	assert.Equal(t, "9", older.rv, "answered as read")
	assert.Same(t, written, s.Last(), "but 12 is kept")
	newer, err := s.decoded(cm("x", "13"))
	require.NoError(t, err)
	assert.Same(t, newer, s.Last())
}
