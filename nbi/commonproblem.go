package nbi

import (
	"encoding/json"
	"net/http"

	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// MediaProblemJSON is the error media type of the O2IMS common reference (RFC 7807).
const MediaProblemJSON = "application/problem+json"

// commonProblemDetails is the ProblemDetails of the O2IMS common reference
// (testdata/reference/o2ims-inventory/common), which the inventory and the monitoring (alarms) references
// share: unlike the provisioning reference's, status is the integer HTTP code and instance a URI (the
// request's absolute URL); title, detail and time are as in the provisioning API.
type commonProblemDetails struct {
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Time     string `json:"time"`
}

// WriteCommonProblem is the Renderer of the APIs on the O2IMS common reference (inventory, alarms):
// application/problem+json, or YAML when the caller prefers it.
func WriteCommonProblem(w http.ResponseWriter, r *http.Request, code int, pd ProblemDetails) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	body := commonProblemDetails{
		Title: pd.Title, Status: code, Detail: pd.Detail, Instance: scheme + "://" + r.Host + r.URL.EscapedPath(), Time: pd.Time,
	}
	if media, _ := Negotiate(r.Header.Get("Accept")); media == query.MediaYAML {
		data, _ := yaml.Marshal(body)
		WriteEncoded(w, code, query.MediaYAML, data)
		return
	}
	data, _ := json.Marshal(body)
	WriteEncoded(w, code, MediaProblemJSON, append(data, '\n'))
}
