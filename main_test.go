package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlagsAcceptThePythonImagesArguments(t *testing.T) {
	var out bytes.Buffer
	o, err := parseFlags(strings.Fields("run /usr/o2ims/src/manager.py --all-namespaces --liveness=http://0.0.0.0:8080/healthz -n default --standalone --verbose"), &out)
	require.NoError(t, err)
	assert.True(t, o.allNamespaces)
	assert.Equal(t, "http://0.0.0.0:8080/healthz", o.liveness)
	assert.Equal(t, multiFlag{"default"}, o.namespaces)
	_, err = parseFlags([]string{"--workers=2", "extra"}, &out)
	assert.EqualError(t, err, `unexpected argument "extra"`)
}

func TestBadEnvironmentIsOneLineAndExitOne(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), nil, func(k string) string {
		if k == "CREATION_TIMEOUT" {
			return "soon"
		}
		return ""
	}, &stderr)
	assert.Equal(t, 1, code)
	assert.Equal(t, "o2ims-operator: CREATION_TIMEOUT must be a positive integer number of seconds, got \"soon\"\n", stderr.String())
}
