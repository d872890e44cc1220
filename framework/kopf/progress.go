package kopf

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ProgressRecord is kopf's per-handler progress, stored as compact JSON in one annotation per handler
// (both key forms). Field names, their order and their meanings are kopf's; absent fields are omitted as
// kopf omits None.
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

// TimeForm is how a record's times are written. kopf changed it, and each version only reads its own:
//   - kopf ≥ 1.37 (the released Python image pins 1.40.1) writes timezone-aware UTC,
//     "2026-12-01T08:49:17.749626+00:00"; from 1.40 it parses a naive time as naive and raises TypeError
//     comparing it with its aware clock, so the object is never retried until it changes;
//   - kopf 1.36 writes naive UTC, "2026-12-01T08:49:17.749626", and compares with a naive clock, so an
//     aware time raises there.
//
// Both always carry six fractional digits (isoformat(timespec='microseconds')).
type TimeForm int

const (
	// TimeAware is kopf ≥ 1.37's form, the default.
	TimeAware TimeForm = iota
	// TimeNaive is kopf 1.36's form.
	TimeNaive
)

func (f TimeForm) String() string {
	if f == TimeNaive {
		return "naive"
	}
	return "aware"
}

// ParseTimeForm reads the KOPF_TIME_FORMAT setting: "aware" (or empty) or "naive".
func ParseTimeForm(v string) (TimeForm, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "aware":
		return TimeAware, nil
	case "naive":
		return TimeNaive, nil
	}
	return TimeAware, fmt.Errorf(`KOPF_TIME_FORMAT must be "aware" (kopf >= 1.37, the released Python image) or "naive" (kopf 1.36), got %q`, v)
}

const naiveLayout = "2006-01-02T15:04:05.000000"

// FormatTime renders a time in UTC as kopf writes it in the given form.
func FormatTime(t time.Time, form TimeForm) string {
	s := t.UTC().Format(naiveLayout)
	if form == TimeAware {
		s += "+00:00"
	}
	return s
}

// ParseTime reads kopf's times in either form: YYYY-MM-DD, "T" or " ", hh:mm:ss, an optional fraction
// (any number of digits, "." or ","), then an optional zone (Z, ±hh, ±hhmm, ±hh:mm) — what kopf's own
// parsers (fromisoformat in 1.36, iso8601 from 1.37) accept in the shape kopf writes. A time without a
// zone is UTC (kopf only ever writes UTC); the form says which it was.
func ParseTime(s string) (time.Time, TimeForm, error) {
	bad := func() (time.Time, TimeForm, error) {
		return time.Time{}, TimeAware, fmt.Errorf("unparseable progress time %q", s)
	}
	if len(s) < 19 || (s[10] != 'T' && s[10] != ' ') {
		return bad()
	}
	base := s[:10] + "T" + s[11:19]
	rest := s[19:]
	frac := ""
	if rest != "" && (rest[0] == '.' || rest[0] == ',') {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return bad()
		}
		frac, rest = rest[1:i], rest[i:]
	}
	form, zone := TimeNaive, "Z"
	switch {
	case rest == "":
	case rest == "Z":
		form = TimeAware
	case rest[0] == '+' || rest[0] == '-':
		form = TimeAware
		z := strings.Replace(rest[1:], ":", "", 1)
		if len(z) == 2 {
			z += "00"
		}
		if len(z) != 4 || strings.Trim(z, "0123456789") != "" {
			return bad()
		}
		zone = rest[:1] + z[:2] + ":" + z[2:]
	default:
		return bad()
	}
	if len(frac) > 9 {
		frac = frac[:9] // beyond nanoseconds: kopf's microseconds never get there
	}
	if frac != "" {
		base += "." + frac
	}
	t, err := time.Parse(time.RFC3339Nano, base+zone)
	if err != nil {
		return bad()
	}
	return t.UTC(), form, nil
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
		if _, _, err := ParseTime(*p); err != nil {
			return nil, err
		}
	}
	if rec.Retries != nil && *rec.Retries < 0 {
		return nil, fmt.Errorf("malformed progress record: negative retries %d", *rec.Retries)
	}
	return &rec, nil
}

// TimeForm is the form of the record's first time (started, stopped, delayed); ok is false when it has
// none. kopf writes all of a record's times in one form.
func (r *ProgressRecord) TimeForm() (form TimeForm, ok bool) {
	for _, p := range []*string{r.Started, r.Stopped, r.Delayed} {
		if p == nil {
			continue
		}
		if _, form, err := ParseTime(*p); err == nil {
			return form, true
		}
	}
	return TimeAware, false
}

// Encode renders the record byte for byte as kopf stores it: json.dumps(record, separators=(',', ':'))
// over kopf's field order, None fields left out, `<` and `>` in sub-handler ids as they are.
func (r *ProgressRecord) Encode() string {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	field := func(name string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		writePyString(&b, name)
		b.WriteByte(':')
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"started", r.Started}, {"stopped", r.Stopped}, {"delayed", r.Delayed}, {"purpose", r.Purpose}} {
		if f.v != nil {
			field(f.name)
			writePyString(&b, *f.v)
		}
	}
	if r.Retries != nil {
		field("retries")
		writePyJSON(&b, *r.Retries, nil, nil)
	}
	if r.Success != nil {
		field("success")
		writePyJSON(&b, *r.Success, nil, nil)
	}
	if r.Failure != nil {
		field("failure")
		writePyJSON(&b, *r.Failure, nil, nil)
	}
	if r.Message != nil {
		field("message")
		writePyString(&b, *r.Message)
	}
	if len(r.Subrefs) > 0 {
		field("subrefs")
		writePyJSON(&b, r.Subrefs, nil, nil)
	}
	b.WriteByte('}')
	return b.String()
}

// SameProgress compares two records as stored.
func SameProgress(a, b *ProgressRecord) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Encode() == b.Encode()
}
