package serviceconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMergeFollowsRFC7396AndLeavesTheCurrentOneAlone(t *testing.T) {
	cur := Config{RetentionPeriod: 3, Extensions: map[string]any{"site": "north", "owner": "ops"}}
	next, err := Merge(cur, []byte(`7`), []byte(`{"site": null, "rack": "r1"}`))
	require.NoError(t, err)
	assert.Equal(t, Config{RetentionPeriod: 7, Extensions: map[string]any{"owner": "ops", "rack": "r1"}}, next)
	assert.Equal(t, Config{RetentionPeriod: 3, Extensions: map[string]any{"site": "north", "owner": "ops"}}, cur, "the stored one is shared: never changed")

	next, err = Merge(cur, nil, []byte(`null`))
	require.NoError(t, err)
	assert.Equal(t, Config{RetentionPeriod: 3, Extensions: map[string]any{}}, next, "null extensions remove them all")

	for _, bad := range [][2]string{{`null`, ``}, {`"3"`, ``}, {``, `[1]`}} {
		var ret, ext []byte
		if bad[0] != "" {
			ret = []byte(bad[0])
		}
		if bad[1] != "" {
			ext = []byte(bad[1])
		}
		_, err := Merge(cur, ret, ext)
		assert.Error(t, err, "%q %q", bad[0], bad[1])
	}
}

func TestValidateBoundsRetentionAndExtensions(t *testing.T) {
	require.NoError(t, Default().Validate())
	assert.Error(t, Config{RetentionPeriod: 0}.Validate())
	assert.Error(t, Config{RetentionPeriod: MaxRetentionDays + 1}.Validate())
	big := make([]byte, maxExtensionsBytes)
	assert.Error(t, Config{RetentionPeriod: 1, Extensions: map[string]any{"x": string(big)}}.Validate())
}
