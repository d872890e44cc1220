package framework

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// ParseLogLevel maps the Python image's LOG_LEVEL (DEBUG, INFO, WARNING, ERROR, CRITICAL) and zap's names
// to a zap level.
func ParseLogLevel(s string) (zapcore.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "DEBUG":
		return zapcore.DebugLevel, nil
	case "", "INFO":
		return zapcore.InfoLevel, nil
	case "WARN", "WARNING":
		return zapcore.WarnLevel, nil
	case "ERROR":
		return zapcore.ErrorLevel, nil
	case "CRITICAL", "FATAL":
		return zapcore.FatalLevel, nil
	default:
		return zapcore.InfoLevel, fmt.Errorf("LOG_LEVEL %q is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL", s)
	}
}

// NewLogger builds the process logger: JSON in a cluster (for log pipelines), console on a terminal.
// client-go's klog output is routed through it too, so every line has one format.
func NewLogger(level zapcore.Level, json bool) *zap.Logger {
	log, err := loggerConfig(level, json).Build()
	if err != nil {
		return zap.NewNop()
	}
	klog.SetLogger(zapr.NewLogger(log.Named("client-go")))
	return log
}

// loggerConfig is zap's production (JSON) or development (console) configuration without sampling: zap's
// production sampler drops repeated lines in a burst without a trace, and a burst is when they matter.
func loggerConfig(level zapcore.Level, json bool) zap.Config {
	var cfg zap.Config
	if json {
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.TimeKey = "time"
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	} else {
		cfg = zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		if fi, err := os.Stderr.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
		}
		cfg.Development = false
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.DisableStacktrace = true
	cfg.Sampling = nil
	return cfg
}

// InCluster tells whether the process runs in a pod (JSON logs then).
func InCluster() bool { return os.Getenv("KUBERNETES_SERVICE_HOST") != "" }
