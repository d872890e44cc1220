package ocloud

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ids are recorded on requests and given to SMOs: the derivation never changes. These values are the
// ones nbi/inventory (now inventory/) answered before the derivation moved here.
func TestIdsArePinned(t *testing.T) {
	oc := DefaultID("https://netbox.example.com/")
	assert.Equal(t, "97a11c0d-3a68-5836-825a-6e42922b1ceb", oc.String())
	assert.Equal(t, oc, DefaultID("https://netbox.example.com"), "a trailing / is the same NetBox")
	assert.Equal(t, "15cde415-b34f-501d-872e-dd74a5ac7656", ResourceID(oc, 7))
	assert.NotEqual(t, ResourceID(oc, 7), ResourceID(DefaultID("https://other.example.com"), 7), "another O-Cloud, other ids")
}

func TestIDFromEnv(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "OCLOUD_ID" {
				return v
			}
			return ""
		}
	}
	id, err := IDFromEnv(env(""), "https://netbox.example.com")
	require.NoError(t, err)
	assert.Equal(t, DefaultID("https://netbox.example.com"), id)
	id, err = IDFromEnv(env(" 262c8f17-52b5-4614-9e56-812ae21fa8a7 "), "https://netbox.example.com")
	require.NoError(t, err)
	assert.Equal(t, uuid.MustParse("262c8f17-52b5-4614-9e56-812ae21fa8a7"), id)
	for _, bad := range []string{"nope", "{262c8f17-52b5-4614-9e56-812ae21fa8a7}", "urn:uuid:262c8f17-52b5-4614-9e56-812ae21fa8a7"} {
		_, err = IDFromEnv(env(bad), "")
		assert.ErrorContains(t, err, "OCLOUD_ID=", bad)
	}
}
