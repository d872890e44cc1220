// Package serviceconfig is the one service configuration the alarms and the performance APIs both have
// (AlarmServiceConfiguration, PerformanceServiceConfiguration, clause 3.7.6.2.4): a retention period in
// days and free extensions, with the same bounds and the same merge-patch rules. Each model stores its
// own (alarms: how long a cleared alarm is kept; performance: a value no longer measured).
package serviceconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// Config is a service configuration.
type Config struct {
	RetentionPeriod int            `json:"retentionPeriod"`
	Extensions      map[string]any `json:"extensions"`
}

// Retention bounds, in days (NOTE 1 of Table 3.7.6.2.4-1: a floor it cannot be set below).
const (
	DefaultRetentionDays = 1
	MaxRetentionDays     = 365
)

// maxExtensionsBytes bounds the free extensions as JSON: merge patches add to them, and they share their
// model's ConfigMap.
const maxExtensionsBytes = 16 << 10

// Default is the configuration before an SMO set one.
func Default() Config {
	return Config{RetentionPeriod: DefaultRetentionDays, Extensions: map[string]any{}}
}

// Validate refuses a retention period outside 1..MaxRetentionDays, and extensions beyond 16 KiB of JSON.
func (c Config) Validate() error {
	if c.RetentionPeriod < 1 || c.RetentionPeriod > MaxRetentionDays {
		return fmt.Errorf("retentionPeriod %d: want a whole number of days from 1 to %d", c.RetentionPeriod, MaxRetentionDays)
	}
	if raw, err := json.Marshal(c.Extensions); err != nil || len(raw) > maxExtensionsBytes {
		return fmt.Errorf("extensions: at most %d bytes of JSON", maxExtensionsBytes)
	}
	return nil
}

// Clone is a copy whose extensions may be changed (never nil).
func (c Config) Clone() Config {
	c.Extensions = maps.Clone(c.Extensions)
	if c.Extensions == nil {
		c.Extensions = map[string]any{}
	}
	return c
}

// Merge applies a JSON merge patch's (RFC 7396) two members to cur, nil where the patch has none: a null
// extension key removes it, null extensions remove them all; retentionPeriod cannot be removed. An error
// is the patch's fault (the APIs answer it 400); the result is not validated yet.
func Merge(cur Config, retention, extensions json.RawMessage) (Config, error) {
	next := Config{RetentionPeriod: cur.RetentionPeriod, Extensions: cur.Clone().Extensions}
	if retention != nil {
		if string(retention) == "null" {
			return next, errors.New("retentionPeriod cannot be removed")
		}
		if err := query.DecodeJSON(retention, &next.RetentionPeriod); err != nil {
			return next, fmt.Errorf("retentionPeriod: %v", err)
		}
	}
	if extensions != nil {
		var ext map[string]any
		if err := query.DecodeJSON(extensions, &ext); err != nil {
			return next, fmt.Errorf("extensions: %v", err)
		}
		if ext == nil { // null: all removed
			next.Extensions = map[string]any{}
		}
		for k, v := range ext {
			if v == nil {
				delete(next.Extensions, k)
			} else {
				next.Extensions[k] = v
			}
		}
	}
	return next, nil
}
