package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

func TestNetBoxStartupCheckWaitsOutBlipsButNotWrongConfiguration(t *testing.T) {
	calls := 0
	blip := func(context.Context) error {
		calls++
		if calls < 3 {
			return &netbox.Error{Kind: netbox.KindServer, Status: 503, Retryable: true}
		}
		return nil
	}
	require.NoError(t, checkNetBox(context.Background(), blip, time.Minute, zap.NewNop()))
	assert.Equal(t, 3, calls, "retried through the 503s")

	calls = 0
	tooOld := func(context.Context) error {
		calls++
		return &netbox.Error{Kind: netbox.KindUnsupported, Err: errors.New("NetBox 4.5.10 < 4.6")}
	}
	assert.Error(t, checkNetBox(context.Background(), tooOld, time.Minute, zap.NewNop()))
	assert.Equal(t, 1, calls, "a wrong version is not retried")

	calls = 0
	down := func(context.Context) error {
		calls++
		return &netbox.Error{Kind: netbox.KindTransport, Retryable: true}
	}
	assert.Error(t, checkNetBox(context.Background(), down, 1500*time.Millisecond, zap.NewNop()), "patience runs out")
	assert.Equal(t, 2, calls)
}

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
