package netboxsim

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	sigsjson "sigs.k8s.io/json"
)

func (s *Server) recordAbandonedPatch(r *http.Request, id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patchLog = append(s.patchLog, PatchRecord{DeviceID: id, IfMatch: r.Header.Get("If-Match"), At: s.opts.Clock()})
}

func (s *Server) handleDevicePatch(w http.ResponseWriter, r *http.Request) {
	id, _ := deviceID(r)
	s.mu.Lock()
	hook := s.patchHook
	s.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	// Numbers as the simulator stores them: int64 when written as an integer, float64 otherwise (16.0
	// stays a float, which an integer field refuses as NetBox does).
	var body map[string]any
	decodeErr := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &body)

	s.mu.Lock()
	rec := PatchRecord{DeviceID: id, IfMatch: r.Header.Get("If-Match"), Body: deepCopyMap(body)}
	if m, ok := body["changelog_message"].(string); ok {
		rec.ChangelogMessage = m
	}
	status, resp, etag, drop := s.applyPatchLocked(id, rec.IfMatch, body, decodeErr, baseURL(r))
	rec.Status = status
	rec.Committed = status == http.StatusOK
	rec.At = s.opts.Clock()
	if drop {
		rec.Status, rec.Dropped = 0, true
	}
	s.patchLog = append(s.patchLog, rec)
	s.mu.Unlock()

	if drop {
		// Committed, but the answer is lost: net/http closes the connection.
		panic(http.ErrAbortHandler)
	}
	writeJSON(w, status, resp, etag)
}

// applyPatchLocked mirrors NetBoxModelViewSet.update: object lookup, If-Match
// check (412 carrying the current ETag), serializer validation, save.
func (s *Server) applyPatchLocked(id int32, ifMatch string, body map[string]any, decodeErr error, base string) (int, any, string, bool) {
	d, ok := s.devices[id]
	if !ok {
		return http.StatusNotFound, map[string]any{"detail": "No Device matches the given query."}, "", false
	}
	current := ETag(d.lastUpdated)
	if ifMatch != "" && ifMatch != "*" {
		matched := false
		for _, e := range strings.Split(ifMatch, ",") {
			if strings.TrimSpace(e) == current {
				matched = true
			}
		}
		if !matched {
			return http.StatusPreconditionFailed, map[string]any{"detail": "Precondition failed."}, current, false
		}
	}
	if decodeErr != nil || body == nil {
		return http.StatusBadRequest, map[string]any{"non_field_errors": []string{"Invalid data. Expected a dictionary, but got str."}}, "", false
	}
	newStatus := d.status
	if v, present := body["status"]; present {
		st, ok := v.(string)
		if !ok || !s.validStatusLocked(st) {
			return http.StatusBadRequest, map[string]any{"status": []string{fmt.Sprintf("%q is not a valid choice.", fmt.Sprint(v))}}, "", false
		}
		newStatus = st
	}
	newCustom := deepCopyMap(d.custom)
	if v, present := body["custom_fields"]; present {
		cf, ok := v.(map[string]any)
		if !ok {
			return http.StatusBadRequest, map[string]any{"custom_fields": []string{"Invalid data format. Custom field data must be passed as a dictionary mapping field names to their values."}}, "", false
		}
		errs := map[string]string{}
		for name, val := range cf {
			f, known := s.fields[name]
			if !known || !f.appliesTo("dcim.device") {
				errs[name] = fmt.Sprintf("Custom field '%s' does not exist for this object type.", name)
				continue
			}
			if err := f.validate(val); err != nil {
				errs[name] = err.Error()
				continue
			}
			newCustom[name] = val
		}
		if len(errs) > 0 {
			return http.StatusBadRequest, map[string]any{"custom_fields": errs}, "", false
		}
	}
	d.status = newStatus
	d.custom = newCustom
	d.lastUpdated = s.stampLocked()
	if m, ok := body["changelog_message"].(string); ok && m != "" {
		d.changelog = append(d.changelog, m)
	}
	drop := false
	if s.dropPatch > 0 {
		s.dropPatch--
		drop = true
	}
	return http.StatusOK, s.renderDeviceLocked(d, base), ETag(d.lastUpdated), drop
}
