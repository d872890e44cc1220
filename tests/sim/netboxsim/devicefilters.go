package netboxsim

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

type predicate func(*device) bool

// devicePredicatesLocked builds the AND of the filters NetBox would apply; a
// parameter with no matching filter is ignored, as NetBox's FilterSet does.
func (s *Server) devicePredicatesLocked(q url.Values) (preds []predicate, badParam, badMsg string) {
	for _, key := range slices.Sorted(maps.Keys(q)) {
		values := q[key]
		if s.ignored[key] {
			continue
		}
		switch {
		case key == "status":
			want := nonEmpty(values)
			if len(want) == 0 {
				continue
			}
			for _, v := range want {
				if !s.validStatusLocked(v) {
					return nil, "status", fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", v)
				}
			}
			preds = append(preds, func(d *device) bool { return slices.Contains(want, d.status) })
		case strings.HasPrefix(key, "last_updated"):
			when, bad, msg := timeFilters(url.Values{key: values})
			if bad != "" {
				return nil, bad, msg
			}
			preds = append(preds, func(d *device) bool { return when(d.lastUpdated) })
		case key == "site_id" || key == "device_type_id":
			ids, ok := idFilter(values)
			if !ok {
				return nil, key, "Select a valid choice. That choice is not one of the available choices."
			}
			if ids == nil {
				continue
			}
			bySite := key == "site_id"
			preds = append(preds, func(d *device) bool {
				if bySite {
					return ids[int64(d.siteID)]
				}
				return ids[int64(d.typeID)]
			})
		case key == "id":
			var ids []int64
			for _, v := range nonEmpty(values) {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return nil, "id", "Enter a number."
				}
				ids = append(ids, n)
			}
			if len(ids) == 0 {
				continue
			}
			preds = append(preds, func(d *device) bool {
				for _, n := range ids {
					if int64(d.id) == n {
						return true
					}
				}
				return false
			})
		case strings.HasPrefix(key, "cf_"):
			p, bad := s.customFieldPredicateLocked(key, values)
			if bad != "" {
				return nil, key, bad
			}
			if p != nil {
				preds = append(preds, p)
			}
		}
	}
	return preds, "", ""
}

func (s *Server) customFieldPredicateLocked(key string, values []string) (predicate, string) {
	name, lookup := strings.TrimPrefix(key, "cf_"), ""
	f, ok := s.fields[name]
	if !ok {
		if i := strings.LastIndex(name, "__"); i > 0 {
			name, lookup = name[:i], name[i+2:]
			f, ok = s.fields[name]
		}
	}
	if !ok || !f.appliesTo("dcim.device") || f.FilterLogic == FilterDisabled {
		return nil, "" // no such filter: ignored
	}
	switch lookup {
	case "":
		return f.exactPredicate(values)
	case "empty":
		// BooleanFilter has no lookup map; a loose text filter (icontains) is not a
		// "standard lookup", so neither gets derived lookups such as __empty.
		if f.Type == TypeBoolean || (f.FilterLogic == FilterLoose && isTextual(f.Type)) {
			return nil, ""
		}
		want, ok := parseBool(values)
		if !ok {
			return nil, ""
		}
		return func(d *device) bool { return isEmptyValue(d.custom, f.Name) == want }, ""
	}
	return nil, "" // other lookups are not simulated
}

func isTextual(t string) bool { return t == TypeText || t == TypeLongText || t == TypeURL }

func (f *field) exactPredicate(values []string) (predicate, string) {
	name := f.Name
	switch f.Type {
	case TypeBoolean:
		want, ok := parseBool(values)
		if !ok {
			return nil, "" // NullBooleanField cleans an unknown value to None: no filtering
		}
		return func(d *device) bool { v, ok := d.custom[name].(bool); return ok && v == want }, ""
	case TypeInteger, TypeDecimal:
		var nums []float64
		for _, v := range nonEmpty(values) {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, "Enter a number."
			}
			nums = append(nums, n)
		}
		if len(nums) == 0 {
			return nil, ""
		}
		return func(d *device) bool {
			var got float64
			switch x := d.custom[name].(type) {
			case int64:
				got = float64(x)
			case float64:
				got = x
			default:
				return false
			}
			for _, n := range nums {
				if got == n {
					return true
				}
			}
			return false
		}, ""
	case TypeText, TypeLongText, TypeURL, TypeSelect:
		want := nonEmpty(values)
		if len(want) == 0 {
			return nil, ""
		}
		loose := f.FilterLogic == FilterLoose && isTextual(f.Type)
		return func(d *device) bool {
			got, ok := d.custom[name].(string)
			if !ok {
				return false
			}
			for _, w := range want {
				if (!loose && got == w) || (loose && strings.Contains(strings.ToLower(got), strings.ToLower(w))) {
					return true
				}
			}
			return false
		}, ""
	}
	return nil, ""
}

// parseBool mirrors Django's NullBooleanField: the last value counts.
func parseBool(values []string) (bool, bool) {
	if len(values) == 0 {
		return false, false
	}
	switch values[len(values)-1] {
	case "true", "True", "1":
		return true, true
	case "false", "False", "0":
		return false, true
	}
	return false, false
}

func isEmptyValue(custom map[string]any, name string) bool {
	v, ok := custom[name]
	return !ok || v == nil || v == ""
}
