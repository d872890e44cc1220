package alarmsapi

import (
	"encoding/json"
	"net/http"

	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// mediaProblemJSON is the error media type the alarms reference declares (RFC 7807).
const mediaProblemJSON = "application/problem+json"

// problemDetails is the reference's ProblemDetails (its common/api/openapi.yaml, shared with the
// inventory): status is the integer HTTP code, instance a URI (the request's absolute URL).
type problemDetails struct {
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Time     string `json:"time"`
}

// writeProblem is the alarms API's nbi.Renderer: application/problem+json, or YAML when preferred.
func writeProblem(w http.ResponseWriter, r *http.Request, code int, pd nbi.ProblemDetails) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	body := problemDetails{
		Title: pd.Title, Status: code, Detail: pd.Detail, Instance: scheme + "://" + r.Host + r.URL.EscapedPath(), Time: pd.Time,
	}
	if media, _ := nbi.Negotiate(r.Header.Get("Accept")); media == query.MediaYAML {
		data, _ := yaml.Marshal(body)
		nbi.WriteEncoded(w, code, query.MediaYAML, data)
		return
	}
	data, _ := json.Marshal(body)
	nbi.WriteEncoded(w, code, mediaProblemJSON, append(data, '\n'))
}
