package netbox

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox/selector"
)

// The selector's rules are tested in package selector; this checks what the
// client makes of them: a KindSchema *Error of one line, the configured fixed
// fields reserved.
func TestNormalizeSelector(t *testing.T) {
	fields := DefaultFieldNames()
	norm, err := normalizeSelector(Selector{"gpu_model": "a100", "cpu_cores": float64(16)}, fields)
	require.NoError(t, err)
	assert.Equal(t, "a100", norm["gpu_model"].Query())
	assert.Equal(t, "16", norm["cpu_cores"].Query())

	for _, sel := range []Selector{
		{"f": 1.5}, {"Upper": 1}, {"c": "a\nb"}, {"n": nil},
		{"o2ims_managed": true}, {"o2ims_request_uid": "x"}, {"o2ims_bmc_address": "x"}, {"o2ims_boot_mac": "x"},
	} {
		_, err := normalizeSelector(sel, fields)
		require.Error(t, err, "%#v", sel)
		assert.True(t, IsKind(err, KindSchema), "%#v", sel)
		var serr *selector.Error
		assert.True(t, errors.As(err, &serr), "%#v wraps the selector's error", sel)
		assert.Equal(t, "netbox schema: schema: "+serr.Error(), err.Error())
		assert.NotContains(t, err.Error(), "\n")
	}

	// Reserved keys follow the configured names.
	custom := FieldNames{Managed: "pool", RequestUID: "owner", BMCAddress: "bmc", BootMAC: "mac"}
	_, err = normalizeSelector(Selector{"o2ims_managed": true}, custom)
	assert.NoError(t, err)
	_, err = normalizeSelector(Selector{"owner": "x"}, custom)
	assert.True(t, IsKind(err, KindSchema))
}

func TestSanitize(t *testing.T) {
	assert.Equal(t, "a b c", sanitizeText("a\nb\t\u2028c", 100))
	assert.Equal(t, "Token [redacted]", sanitizeText("Token 0123456789abcdef0123", 100))
	assert.Equal(t, "token file is empty", sanitizeText("token file is empty", 100))
	assert.Equal(t, "x [redacted] y", sanitizeText("x nbt_ab12.cd34 y", 100))
	assert.Equal(t, "abc…", sanitizeText("abcdef", 4))
	assert.Equal(t, "bad at [address] and [redacted]", sanitizeMessage("bad at redfish://u:p@10.0.0.1/x and root:calvin@bmc", 100))
	assert.True(t, utf8.ValidString(sanitizeText("a\xffb", 10)))
}
