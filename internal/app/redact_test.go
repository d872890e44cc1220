package app

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The process log masks error fields above DEBUG (a NetBox transport error names an internal address
// and the DNS server), and keeps them raw at DEBUG.
func TestTheLogMasksErrorFieldsAboveDebug(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	log := redactErrors(zap.New(core)).With(zap.NamedError("conn", errors.New("dial tcp 10.20.30.40:443: connect: connection refused")))
	err := errors.New(`Get "https://netbox.internal/api/": dial tcp: lookup netbox.internal on 10.96.0.10:53: no such host`)
	log.Warn("inventory listing failed", zap.Error(err), zap.String("site", "rack 10.1.1.1"))
	log.Debug("inventory listing failed", zap.NamedError("cause", err))
	all := logs.All()
	assert.Equal(t, map[string]any{
		"conn":  "dial tcp [address]: connect: connection refused",
		"error": `Get "[url]": dial tcp: lookup [name] on [DNS server]: no such host`,
		"site":  "rack 10.1.1.1", // not an error field: ours, never an error's text
	}, all[0].ContextMap())
	assert.Equal(t, err.Error(), all[1].ContextMap()["cause"], "raw at DEBUG")
}
