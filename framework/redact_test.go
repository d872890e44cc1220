package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"

	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
)

// A handler's error quoting a NetBox transport failure (an internal address, a DNS server) reaches
// neither the object (kopf's progress record) nor its events nor a log line above DEBUG: Options.Redact
// masks it (internal/app wires netcause.Redact). The unmasked text is logged at DEBUG only.
func TestHandlerErrorsAreRedactedBeforeTheyLeaveTheProcess(t *testing.T) {
	t.Parallel()
	const label = "redact"
	internal := []string{"10.20.30.40", "10.96.0.10", "netbox.internal"}
	raw := []error{
		errors.New(`Get "https://netbox.internal:8443/api/dcim/devices/7/": dial tcp 10.20.30.40:443: connect: connection refused`),
		&TemporaryError{Message: "NetBox unreachable", Err: errors.New(`dial tcp: lookup netbox.internal on 10.96.0.10:53: no such host`), Delay: 50 * time.Millisecond},
		&PermanentError{Message: "inventory unusable", Err: errors.New(`read tcp 10.1.2.3:51234->10.20.30.40:443: connection reset by peer`)},
	}
	core, logs := observer.New(zapcore.DebugLevel)
	var runs atomic.Int32
	to := newTestOperator(t, label, Options{Redact: netcause.Redact, Logger: zap.New(core)}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(context.Context, *Cause) error {
			return raw[min(int(runs.Add(1)), len(raw))-1]
		}, Retries(10)) // limited: its progress record is written on every retry (storeProgress)
	})
	to.start(t)
	create(t, widget(label, "rd1", map[string]any{"size": 1}))
	eventually(t, 30*time.Second, func() bool {
		return hasEvent(events(t, "default", "rd1"), corev1.EventTypeWarning, EventHandlerFailed, "inventory unusable")
	}, "the handler never failed permanently")

	leaks := func(s string) bool {
		for _, a := range internal {
			if strings.Contains(s, a) {
				return true
			}
		}
		return false
	}
	// Progress records go where the object keeps them (annotations, or status with a status subresource).
	bodies := append(to.rec.Bodies("PATCH", "/widgets/rd1"), to.rec.Bodies("PATCH", "/widgets/rd1/status")...)
	assert.True(t, strings.Contains(strings.Join(bodies, ""), "[address]"), "no progress record with the masked error written: %q", bodies)
	for _, b := range bodies {
		assert.False(t, leaks(b), "written to the object: %s", b)
	}
	stored, _ := json.Marshal(mustGet(t, "rd1").Object)
	assert.False(t, leaks(string(stored)), "on the object: %s", stored)
	evs := events(t, "default", "rd1")
	assert.True(t, hasEvent(evs, corev1.EventTypeWarning, EventHandlerRetrying, "dial tcp [address]"), "the retry event says what failed, masked")
	for _, e := range evs {
		assert.False(t, leaks(e.Message), "in an event: %s", e.Message)
	}
	rawAtDebug := false
	for _, e := range logs.All() {
		text := e.Message
		for k, v := range e.ContextMap() {
			text += " " + k + "=" + fmt.Sprint(v)
		}
		if e.Level > zapcore.DebugLevel {
			assert.False(t, leaks(text), "logged at %s: %s", e.Level, text)
		} else if leaks(text) {
			rawAtDebug = true
		}
	}
	assert.True(t, rawAtDebug, "the unmasked error is not kept at DEBUG")
}
