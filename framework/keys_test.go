package framework

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

const prPrefix = "provisioningrequests.o2ims.provisioning.oran.org"

// The golden vectors of the brief: what the Python (kopf) operator wrote on real objects.
func TestKeysMatchThePythonOperatorsAnnotations(t *testing.T) {
	n := keyNamer{prefix: prPrefix}
	cases := []struct{ name, v1, v2 string }{
		{"last-handled-configuration", "last-ha-a.A3qw", "last-handled-configuration"},
		{"create_fn/sub_validations", "create_-9UaJzw", "create_fn.sub_validations"},
		{"create_fn/sub_creation", "create_-.BW96w", "create_fn.sub_creation"},
		{"create_fn/check_c_status", "create_-Y1OpkA", "create_fn.check_c_status"},
		{"create_fn", "create_fn", "create_fn"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, prPrefix+"/"+c.v1, n.v1(c.name))
			assert.Equal(t, prPrefix+"/"+c.v2, n.v2(c.name))
			keys := n.keys(c.name)
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
	n := keyNamer{prefix: "my-operator.example.com"}
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
		assert.Equal(t, c.out, n.v1(c.in), "v1 of %q", c.in)
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
		assert.Equal(t, c.out, n.v2(c.in), "v2 of %q", c.in)
	}
}

func TestKeysAreDeduplicatedWhenV1EqualsV2(t *testing.T) {
	n := keyNamer{prefix: "kopf.zalando.org"}
	assert.Len(t, n.keys("..."), 1)
	assert.Len(t, n.keys(strings.Repeat(".", 64)), 2)
}
