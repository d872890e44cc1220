package app

import (
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"

	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
)

// Errors quote what Go or a server wrote, addresses and DNS servers included (a NetBox transport error:
// "dial tcp 10.20.30.40:443", "lookup netbox.internal on 10.96.0.10:53"). None may leave the process in a
// status, an event or a log line (issue 34), so the same mask, netcause.Redact, is applied to all three:
// handlers' statuses (handlers/status.go), the framework's progress records and events
// (framework.Options.Redact), and here the log's error fields above DEBUG. A DEBUG line keeps the raw
// text: whoever turns DEBUG on to diagnose a connection sees where it went; the framework logs a failure's
// unmasked text at DEBUG for that. The log's free-text messages are not masked: they are ours, and carry
// no error text (an error goes in a field).

// redactErrors wraps log so that its error fields (zap.Error, or a string field "error") are masked in
// every entry above DEBUG, and client-go's klog lines go through it too.
func redactErrors(log *zap.Logger) *zap.Logger {
	log = log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return redactingCore{c} }))
	klog.SetLogger(zapr.NewLogger(log.Named("client-go")))
	return log
}

type redactingCore struct{ zapcore.Core }

func (c redactingCore) With(fields []zapcore.Field) zapcore.Core {
	return redactingCore{c.Core.With(redactFields(fields))}
}

func (c redactingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c redactingCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Level > zapcore.DebugLevel {
		fields = redactFields(fields)
	}
	return c.Core.Write(e, fields)
}

func redactFields(fields []zapcore.Field) []zapcore.Field {
	out := make([]zapcore.Field, len(fields))
	for i, f := range fields {
		switch {
		case f.Type == zapcore.ErrorType:
			if err, ok := f.Interface.(error); ok && err != nil {
				f = zap.String(f.Key, netcause.Redact(err.Error()))
			}
		case f.Type == zapcore.StringType && (f.Key == "error" || f.Key == "err"):
			f.String = netcause.Redact(f.String)
		}
		out[i] = f
	}
	return out
}
