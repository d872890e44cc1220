package performanceapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/performance"
	"github.com/o2ims-operator/o2ims-operator/serviceconfig"
)

// The performance service configuration (clause 3.7.4.4): GET, PUT (a whole new one) and PATCH (a JSON
// merge patch, RFC 7396, answered with only the attributes it modified). Every answer carries an ETag of
// the configuration; a PUT or PATCH with If-Match naming another is 412 (Tables 3.7.4.4.3.3-2 and
// 3.7.4.4.3.4-2: the resource was modified by another entity meanwhile).

const (
	maxBody         = 64 << 10
	mediaMergePatch = "application/merge-patch+json"
)

// readBody reads a body sent as one of media, at most maxBody bytes (400/413/415 otherwise).
func readBody(r *http.Request, media ...string) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !slices.Contains(media, mt) {
		return nil, nbi.NewProblem(http.StatusUnsupportedMediaType, "the body is sent as %s", media[0])
	}
	if r.ContentLength > maxBody {
		return nil, nbi.NewProblem(http.StatusRequestEntityTooLarge, "the body is at most %d bytes", maxBody)
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, nbi.NewProblem(http.StatusBadRequest, "the body could not be read")
	}
	if int64(len(data)) > maxBody {
		return nil, nbi.NewProblem(http.StatusRequestEntityTooLarge, "the body is at most %d bytes", maxBody)
	}
	return data, nil
}

func (a *API) getConfig(w http.ResponseWriter, r *http.Request) error {
	s, err := a.load(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etagOf(s.Config))
	a.mux.Write(w, r, http.StatusOK, s.Config)
	return nil
}

// etagOf is a strong entity tag of the configuration: a digest of its JSON (encoding/json sorts keys).
func etagOf(c performance.ServiceConfig) string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// putConfig replaces the configuration: retentionPeriod (days, 1 to 365) and extensions.
func (a *API) putConfig(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(r, query.MediaJSON)
	if err != nil {
		return err
	}
	var cfg performance.ServiceConfig
	if err := query.DecodeJSON(data, &cfg); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not a PerformanceServiceConfiguration: %v", err)
	}
	if cfg.Extensions == nil {
		cfg.Extensions = map[string]any{}
	}
	next, err := a.setConfig(r, func(performance.ServiceConfig) (performance.ServiceConfig, error) { return cfg, nil })
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etagOf(next))
	a.mux.Write(w, r, http.StatusOK, next)
	return nil
}

// patchConfig merges a JSON merge patch into the configuration: a null extension key removes it;
// retentionPeriod cannot be removed. The answer holds only what the patch named.
func (a *API) patchConfig(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(r, mediaMergePatch, query.MediaJSON)
	if err != nil {
		return err
	}
	var patch struct {
		RetentionPeriod json.RawMessage `json:"retentionPeriod,omitempty"`
		Extensions      json.RawMessage `json:"extensions,omitempty"`
	}
	if err := query.DecodeJSON(data, &patch); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not a PerformanceServiceConfiguration patch: %v", err)
	}
	if patch.RetentionPeriod == nil && patch.Extensions == nil {
		return nbi.NewProblem(http.StatusBadRequest, "nothing to modify: send retentionPeriod or extensions")
	}
	next, err := a.setConfig(r, func(cur performance.ServiceConfig) (performance.ServiceConfig, error) {
		return mergeConfig(cur, patch.RetentionPeriod, patch.Extensions)
	})
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etagOf(next))
	out := map[string]any{}
	if patch.RetentionPeriod != nil {
		out["retentionPeriod"] = next.RetentionPeriod
	}
	if patch.Extensions != nil {
		out["extensions"] = next.Extensions
	}
	a.mux.Write(w, r, http.StatusOK, out)
	return nil
}

// mergeConfig merges a patch's members into cur (serviceconfig.Merge); its fault is a 400.
func mergeConfig(cur performance.ServiceConfig, retention, extensions json.RawMessage) (performance.ServiceConfig, error) {
	next, err := serviceconfig.Merge(cur, retention, extensions)
	if err != nil {
		return next, nbi.NewProblem(http.StatusBadRequest, "%s", err)
	}
	return next, nil
}

// setConfig stores the configuration change makes of the current one, checked, and answers it.
func (a *API) setConfig(r *http.Request, change func(performance.ServiceConfig) (performance.ServiceConfig, error)) (performance.ServiceConfig, error) {
	ifMatch := strings.TrimSpace(r.Header.Get("If-Match"))
	s, err := a.update(r.Context(), func(s *performance.State) (bool, error) {
		if ifMatch != "" && ifMatch != "*" && ifMatch != etagOf(s.Config) {
			return false, nbi.NewProblem(http.StatusPreconditionFailed, "If-Match %s: the configuration was modified meanwhile (now %s); read it again",
				nbi.Truncate(ifMatch, 80), etagOf(s.Config))
		}
		next, err := change(s.Config)
		if err != nil {
			return false, err
		}
		if err := next.Validate(); err != nil {
			return false, nbi.NewProblem(http.StatusBadRequest, "%v", err)
		}
		s.Config = next
		return true, nil
	})
	if err != nil {
		return performance.ServiceConfig{}, err
	}
	return s.Config, nil
}
