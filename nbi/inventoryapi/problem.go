package inventoryapi

import (
	"encoding/json"
	"net/http"

	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
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

// writeProblem is the inventory API's nbi.Renderer: application/problem+json, or YAML when the caller
// prefers it.
func (a *API) writeProblem(w http.ResponseWriter, r *http.Request, code int, pd nbi.ProblemDetails) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	body := inventoryProblemDetails{
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
