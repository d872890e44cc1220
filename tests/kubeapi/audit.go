package kubeapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Every request once, when answered, with who made it, the verb, the object and the status.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
`

// AuditEvent is one request as the API server's audit log records it (Options.Audit).
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestURI string `json:"requestURI"`
}

// AuditLog is the audit log's path (written only with Options.Audit).
func (s *Server) AuditLog() string { return filepath.Join(s.Dir, "audit.log") }

// AuditEvents reads every request the audit log holds so far.
func (s *Server) AuditEvents() ([]AuditEvent, error) {
	if !s.opts.Audit {
		return nil, fmt.Errorf("kubeapi: the server was started without Options.Audit")
	}
	f, err := os.Open(s.AuditLog())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("kubeapi: audit log %s: %w", s.AuditLog(), err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
