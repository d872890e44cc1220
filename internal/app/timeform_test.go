package app

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBadKopfTimeFormatStopsTheOperatorAtStart(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), nil, func(k string) string {
		if k == "KOPF_TIME_FORMAT" {
			return "1.36"
		}
		return ""
	}, io.Discard, &stderr)
	assert.Equal(t, 1, code)
	assert.Equal(t, "o2ims-operator: KOPF_TIME_FORMAT must be \"aware\" (kopf >= 1.37, the released Python image) or \"naive\" (kopf 1.36), got \"1.36\"\n", stderr.String())
}
