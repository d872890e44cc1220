package netboxsim

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// timeFilters reads NetBox's last_updated lookups (last_updated, __gte, __gt, __lte, __lt): a value
// that is not an ISO 8601 time is a 400 naming the parameter, as django-filter answers.
func timeFilters(q url.Values) (func(time.Time) bool, string, string) {
	type bound struct {
		op string
		t  time.Time
	}
	var bounds []bound
	for _, op := range []string{"", "__gte", "__gt", "__lte", "__lt"} {
		for _, v := range nonEmpty(q["last_updated"+op]) {
			t, err := parseNetBoxTime(v)
			if err != nil {
				return nil, "last_updated" + op, "Enter a valid date/time."
			}
			bounds = append(bounds, bound{op, t})
		}
	}
	return func(lu time.Time) bool {
		for _, b := range bounds {
			ok := false
			switch b.op {
			case "":
				ok = lu.Equal(b.t)
			case "__gte":
				ok = !lu.Before(b.t)
			case "__gt":
				ok = lu.After(b.t)
			case "__lte":
				ok = !lu.After(b.t)
			case "__lt":
				ok = lu.Before(b.t)
			}
			if !ok {
				return false
			}
		}
		return true
	}, "", ""
}

// parseNetBoxTime reads the ISO 8601 forms Django's DateTimeField accepts: RFC 3339 with or without
// fractions, and a naive time taken as UTC (NetBox's TIME_ZONE default).
func parseNetBoxTime(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", v)
}

// idFilter reads an "id"-style parameter (repeated, ORed); ok is false on a non-number.
func idFilter(values []string) (ids map[int64]bool, ok bool) {
	for _, v := range nonEmpty(values) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, false
		}
		if ids == nil {
			ids = map[int64]bool{}
		}
		ids[n] = true
	}
	return ids, true
}

func nonEmpty(values []string) []string {
	var out []string
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
