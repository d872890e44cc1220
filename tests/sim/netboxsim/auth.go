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

// routeModels are the Django models behind each route ("" for /api/status/, which asks for no model
// permission).
var routeModels = map[string]string{
	RouteCustomFields: "extras.customfield",
	RouteDevices:      "dcim.device",
	RouteDevice:       "dcim.device",
	RouteSites:        "dcim.site",
	RouteDeviceTypes:  "dcim.devicetype",
}

// methodActions is TokenPermissions.perms_map: the permission each method needs on the view's model.
var methodActions = map[string]string{
	http.MethodGet: "view", http.MethodHead: "view", http.MethodPost: "add",
	http.MethodPut: "change", http.MethodPatch: "change", http.MethodDelete: "delete",
}

// permitted mirrors NetBox's TokenPermissions.has_permission, checked before the view runs (so before
// a device is looked up: a PATCH of a device that does not exist is a 403 without the permission and
// a 404 with it): an unsafe method needs a write-enabled token, then the model permission of
// perms_map. An anonymous request (AllowAnonymous) is not restricted here.
func (s *Server) permitted(r *http.Request, route string) bool {
	parts := strings.Fields(r.Header.Get("Authorization"))
	if len(parts) != 2 {
		return true
	}
	tok := parts[1]
	s.mu.Lock()
	defer s.mu.Unlock()
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
	if !safe && slices.Contains(s.opts.ReadOnlyTokens, tok) {
		return false
	}
	perms, restricted := s.opts.Permissions[tok]
	model, ok := routeModels[route]
	action, known := methodActions[r.Method]
	if !restricted || !ok || !known {
		return true
	}
	app, name, _ := strings.Cut(model, ".")
	return slices.Contains(perms, app+"."+action+"_"+name)
}
