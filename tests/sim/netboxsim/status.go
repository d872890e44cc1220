package netboxsim

import "net/http"

func (s *Server) handleStatus(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"django-version":      "5.2.9",
		"hostname":            "netboxsim",
		"installed_apps":      map[string]any{},
		"netbox-version":      v,
		"netbox-full-version": v + "-Community",
		"plugins":             map[string]any{},
		"python-version":      "3.12.3",
		"rq-workers-running":  1,
	}, "")
}
