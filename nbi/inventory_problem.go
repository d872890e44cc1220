package nbi

import (
	"encoding/json"
	"net/http"

	"sigs.k8s.io/yaml"
)

// mediaProblemJSON is the error media type the inventory reference declares (RFC 7807).
const mediaProblemJSON = "application/problem+json"

// inventoryProblemDetails is the inventory reference's ProblemDetails (its common/api/openapi.yaml):
// unlike the provisioning reference's, status is the integer HTTP code, and instance is a URI (the
// absolute URL of the request). title, detail and time are as in the provisioning API.
type inventoryProblemDetails struct {
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Time     string `json:"time"`
}

// writeInventoryProblem answers an error of an inventory route: application/problem+json, or YAML
// when the caller prefers it.
func (s *Server) writeInventoryProblem(w http.ResponseWriter, r *http.Request, code int, pd ProblemDetails) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	body := inventoryProblemDetails{
		Title: pd.Title, Status: code, Detail: pd.Detail, Instance: scheme + "://" + r.Host + r.URL.EscapedPath(), Time: pd.Time,
	}
	if media, _ := negotiate(r.Header.Get("Accept")); media == mediaYAML {
		data, _ := yaml.Marshal(body)
		writeEncoded(w, code, mediaYAML, data)
		return
	}
	data, _ := json.Marshal(body)
	writeEncoded(w, code, mediaProblemJSON, append(data, '\n'))
}
