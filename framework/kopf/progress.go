package kopf

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ProgressRecord is kopf's per-handler progress, stored as compact JSON in one annotation per handler
// (both key forms). Field names and meanings are kopf's; absent fields are omitted as kopf omits None.
type ProgressRecord struct {
	Started *string  `json:"started,omitempty"`
	Stopped *string  `json:"stopped,omitempty"`
	Delayed *string  `json:"delayed,omitempty"`
	Purpose *string  `json:"purpose,omitempty"`
	Retries *int     `json:"retries,omitempty"`
	Success *bool    `json:"success,omitempty"`
	Failure *bool    `json:"failure,omitempty"`
	Message *string  `json:"message,omitempty"`
	Subrefs []string `json:"subrefs,omitempty"`
}

// kopf 1.36 (the Python image) writes naive UTC ISO-8601 with microseconds and compares naive datetimes, so
// an offset suffix would make it raise on rollback. Write naive, read both forms.
const timeLayout = "2006-01-02T15:04:05.000000"

// FormatTime renders a time as kopf 1.36 does.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// ParseTime reads kopf's times: naive (1.36) or with an offset (1.44), with or without fractions.
func ParseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unparseable progress time %q", s)
}

// DecodeProgress reads a record written by us or by kopf and checks it: times that parse, no negative
// retry count. Anything else is an error the caller treats as "no record" (someone else's JSON must
// neither crash nor block the object).
func DecodeProgress(raw string) (*ProgressRecord, error) {
	var rec ProgressRecord
	if err := json.NewDecoder(strings.NewReader(raw)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("malformed progress record: %w", err)
	}
	for _, p := range []*string{rec.Started, rec.Stopped, rec.Delayed} {
		if p == nil {
			continue
		}
		if _, err := ParseTime(*p); err != nil {
			return nil, err
		}
	}
	if rec.Retries != nil && *rec.Retries < 0 {
		return nil, fmt.Errorf("malformed progress record: negative retries %d", *rec.Retries)
	}
	return &rec, nil
}

// Encode renders the record as kopf stores it: compact JSON, no spaces.
func (r *ProgressRecord) Encode() string {
	b, _ := json.Marshal(r) // strings, ints and bools always marshal
	return string(b)
}

// SameProgress compares two records as stored.
func SameProgress(a, b *ProgressRecord) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Encode() == b.Encode()
}
