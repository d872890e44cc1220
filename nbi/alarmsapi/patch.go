package alarmsapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"time"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/serviceconfig"
)

// maxBody bounds a PATCH or PUT body: a few fields and the configuration's extensions.
const maxBody = 64 << 10

const mediaMergePatch = "application/merge-patch+json"

// readBody reads a body sent as one of media, at most maxBody bytes (400/413/415 otherwise).
func readBody(r *http.Request, media ...string) ([]byte, error) {
	return readBodyOf(r, maxBody, media...)
}

func readBodyOf(r *http.Request, maxBody int64, media ...string) ([]byte, error) {
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

// modifications is the reference's AlarmEventRecordModifications.
type modifications struct {
	Acknowledged *bool            `json:"alarmAcknowledged,omitempty"`
	Severity     *alarms.Severity `json:"perceivedSeverity,omitempty"`
}

// patch acknowledges an alarm (alarmAcknowledged: true) or clears one whose definition clears
// manually (perceivedSeverity: 5, CLEARED); clearing an automatic one is a 409, since it clears when its
// fault goes. It answers the modifications as applied. Acknowledging again, or clearing a cleared alarm,
// changes nothing and answers the same.
func (a *API) patch(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	data, err := readBody(r, mediaMergePatch, query.MediaJSON)
	if err != nil {
		return err
	}
	var mods modifications
	if err := query.DecodeJSON(data, &mods); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not an AlarmEventRecordModifications: %v", err)
	}
	if mods.Acknowledged == nil && mods.Severity == nil {
		return nbi.NewProblem(http.StatusBadRequest, "nothing to modify: send alarmAcknowledged: true, or perceivedSeverity: 5 (CLEARED)")
	}
	if mods.Severity != nil && *mods.Severity != alarms.SeverityCleared {
		return nbi.NewProblem(http.StatusBadRequest, "perceivedSeverity may only be set to 5 (CLEARED), not %d", int(*mods.Severity))
	}
	manual := false
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	var out modifications
	_, err = a.store.Update(ctx, func(s *alarms.State) (bool, error) {
		al, ok := s.Get(id)
		if !ok {
			return false, nbi.NewProblem(http.StatusNotFound, "alarm %q not found", id)
		}
		var changed bool
		changed, manual, err = modify(al, mods, time.Now().UTC())
		out = modifications{Acknowledged: mods.Acknowledged, Severity: mods.Severity}
		return changed, err
	})
	var p *nbi.Problem
	if errors.As(err, &p) {
		return p
	}
	if err != nil {
		return storeError(err)
	}
	if manual {
		if al, ok := a.store.Last().Get(id); ok {
			a.metrics.Cleared(al.Definition(), true)
		}
	}
	a.mux.Write(w, r, http.StatusOK, out)
	return nil
}

// modify applies mods to al at now: whether it changed, and whether it was cleared by hand now.
func modify(al *alarms.Alarm, mods modifications, now time.Time) (changed, cleared bool, err error) {
	if mods.Severity != nil {
		def := al.Definition()
		if def == nil || def.Clearing != alarms.Manual {
			return false, false, nbi.NewProblem(http.StatusConflict,
				"alarm %q clears automatically (clearingType AUTOMATIC): it is cleared when its fault goes, not by hand", al.ID)
		}
		if al.Active() {
			al.Cleared, al.Severity, al.Changed, al.Held = &now, alarms.SeverityCleared, now, true
			changed, cleared = true, true
		}
	}
	if mods.Acknowledged != nil {
		switch {
		case !*mods.Acknowledged && al.Acknowledged:
			return false, false, nbi.NewProblem(http.StatusConflict, "alarm %q is acknowledged; an acknowledgement cannot be withdrawn", al.ID)
		case *mods.Acknowledged && !al.Acknowledged:
			al.Acknowledged, al.AcknowledgedAt, al.Changed, changed = true, &now, now, true
		}
	}
	return changed, cleared, nil
}

func (a *API) getConfig(w http.ResponseWriter, r *http.Request) error {
	s, err := a.load(r.Context())
	if err != nil {
		return err
	}
	a.mux.Write(w, r, http.StatusOK, s.Config)
	return nil
}

// putConfig replaces the configuration: retentionPeriod (days, at least 1) and extensions.
func (a *API) putConfig(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(r, query.MediaJSON)
	if err != nil {
		return err
	}
	var cfg alarms.ServiceConfig
	if err := query.DecodeJSON(data, &cfg); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not an AlarmServiceConfiguration: %v", err)
	}
	if cfg.Extensions == nil {
		cfg.Extensions = map[string]any{}
	}
	return a.setConfig(w, r, func(alarms.ServiceConfig) (alarms.ServiceConfig, error) { return cfg, nil })
}

// patchConfig merges a JSON merge patch (RFC 7396) into the configuration: a null extension key
// removes it; retentionPeriod cannot be removed.
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
		return nbi.NewProblem(http.StatusBadRequest, "the body is not an AlarmServiceConfigurationPatch: %v", err)
	}
	return a.setConfig(w, r, func(cur alarms.ServiceConfig) (alarms.ServiceConfig, error) {
		return mergeConfig(cur, patch.RetentionPeriod, patch.Extensions)
	})
}

// mergeConfig merges a patch's members into cur (serviceconfig.Merge); its fault is a 400.
func mergeConfig(cur alarms.ServiceConfig, retention, extensions json.RawMessage) (alarms.ServiceConfig, error) {
	next, err := serviceconfig.Merge(cur, retention, extensions)
	if err != nil {
		return next, nbi.NewProblem(http.StatusBadRequest, "%s", err)
	}
	return next, nil
}

// setConfig stores the configuration change makes of the current one, checked, and answers it.
func (a *API) setConfig(w http.ResponseWriter, r *http.Request, change func(alarms.ServiceConfig) (alarms.ServiceConfig, error)) error {
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	s, err := a.store.Update(ctx, func(s *alarms.State) (bool, error) {
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
	var p *nbi.Problem
	if errors.As(err, &p) {
		return p
	}
	if err != nil {
		return storeError(err)
	}
	a.mux.Write(w, r, http.StatusOK, s.Config)
	return nil
}
