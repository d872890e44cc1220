package nbi

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// Media types the API reads and writes; the reference lists both for every body.
const (
	mediaJSON = query.MediaJSON
	mediaYAML = query.MediaYAML
)

// Negotiate picks the answer's media type from an Accept header: YAML when the caller prefers it, JSON
// otherwise (also when there is no Accept), and ok=false when the caller accepts neither.
func Negotiate(accept string) (media string, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return mediaJSON, true
	}
	qJSON, qYAML := -1.0, -1.0 // -1: no range named it
	specJSON, specYAML := -1, -1
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		consider := func(target string, best *float64, spec *int) {
			s := specificity(mt, target)
			if s > *spec {
				*spec, *best = s, q
			}
		}
		consider(mediaJSON, &qJSON, &specJSON)
		consider(mediaYAML, &qYAML, &specYAML)
	}
	switch {
	case qYAML > 0 && qYAML > qJSON:
		return mediaYAML, true
	case qJSON > 0:
		return mediaJSON, true
	case qYAML > 0:
		return mediaYAML, true
	}
	return mediaJSON, false
}

// specificity ranks how closely a media range names target: 2 exactly, 1 as type/*, 0 as */*, -1 not.
func specificity(mediaRange, target string) int {
	switch {
	case mediaRange == target:
		return 2
	case mediaRange == "*/*":
		return 0
	case strings.HasSuffix(mediaRange, "/*") && strings.HasPrefix(target, strings.TrimSuffix(mediaRange, "*")):
		return 1
	}
	return -1
}

// write answers code with body encoded as the caller accepts it. An encoding failure is a bug and
// answers 500 (nothing has been written yet at that point).
func (s *Server) write(w http.ResponseWriter, r *http.Request, code int, body any) {
	media, _ := Negotiate(r.Header.Get("Accept"))
	var data []byte
	var err error
	if media == mediaYAML {
		data, err = yaml.Marshal(body)
	} else {
		data, err = json.Marshal(body)
		data = append(data, '\n')
	}
	if err != nil {
		s.log.Error("encoding an answer failed", zap.Error(err))
		if _, isProblem := body.(ProblemDetails); !isProblem {
			s.writeProblem(w, r, AsProblem(err))
			return
		}
		data, code, media = []byte(`{"status":"`+Unservable+`"}`+"\n"), http.StatusInternalServerError, mediaJSON
	}
	WriteEncoded(w, code, media, data)
}

// WriteEncoded sends an answer already encoded as media.
func WriteEncoded(w http.ResponseWriter, code int, media string, data []byte) {
	h := w.Header()
	h.Set("Content-Type", media)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}
