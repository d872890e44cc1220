package netboxsim

import (
	"net/http"
	"slices"
	"strings"
)

// authenticate mirrors netbox.api.authentication.TokenAuthentication plus
// LOGIN_REQUIRED: DRF answers 403 (not 401) because no authenticator declares a
// WWW-Authenticate header.
func (s *Server) authenticate(r *http.Request) (int, string) {
	s.mu.Lock()
	tokens, anonymous := s.opts.Tokens, s.opts.AllowAnonymous
	s.mu.Unlock()
	parts := strings.Fields(r.Header.Get("Authorization"))
	if len(parts) == 0 || (!strings.EqualFold(parts[0], "Token") && !strings.EqualFold(parts[0], "Bearer")) {
		if anonymous {
			return 0, ""
		}
		return http.StatusForbidden, "Authentication credentials were not provided."
	}
	if len(parts) != 2 {
		return http.StatusForbidden, `Invalid authorization header: Must be in the form "Bearer <key>.<token>" or "Token <token>"`
	}
	value := parts[1]
	if strings.HasPrefix(value, "nbt_") {
		if !strings.Contains(strings.TrimPrefix(value, "nbt_"), ".") {
			return http.StatusForbidden, "Invalid authorization header: Could not parse key from v2 token. Did you mean to use 'Token' instead of 'Bearer'?"
		}
		if slices.Contains(tokens, value) {
			return 0, ""
		}
		return http.StatusForbidden, "Invalid v2 token"
	}
	if slices.Contains(tokens, value) {
		return 0, ""
	}
	return http.StatusForbidden, "Invalid v1 token"
}
