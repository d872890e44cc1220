package alarmsapi

import (
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// AlertmanagerPath is where Alertmanager posts its webhook (a receiver's webhook_configs url): on the
// same listener and authentication as the API (with NBI_AUTH=kubernetes a bearer token allowed post on
// this path as a non-resource URL: nbi.Mux.HandleURL). Not a path of the reference, which declares the payload (AlertmanagerNotification)
// but leaves the route to each implementation.
const AlertmanagerPath = Root + "/v1/alertmanager"

// maxAlertBody bounds a notification: Alertmanager's max_alerts (set it) keeps it far below.
const maxAlertBody = 4 << 20

// WithAlertmanager serves the webhook receiver, mapping alerts through rc.
func (a *API) WithAlertmanager(rc *alarms.Receiver) *API {
	a.alerts = rc
	return a
}

// receive applies one notification: 204 once stored (Alertmanager retries anything else).
func (a *API) receive(w http.ResponseWriter, r *http.Request) error {
	data, err := readBodyOf(r, maxAlertBody, query.MediaJSON)
	if err != nil {
		return err
	}
	var n alarms.AlertNotification
	if err := query.DecodeJSON(data, &n); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not an Alertmanager notification: %v", err)
	}
	if err := n.Validate(); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	var raised, cleared, dropped int
	_, err = a.store.Update(ctx, func(s *alarms.State) (bool, error) {
		var changed bool
		changed, raised, cleared, dropped = a.alerts.Apply(s, &n, time.Now().UTC())
		return changed, nil
	})
	if err != nil {
		return storeError(err)
	}
	a.metrics.Counted(alarms.AlertFiring, raised, cleared, dropped)
	if dropped > 0 {
		a.mux.Log().Warn("alerts not raised as alarms: the store is at its cap", zap.Int("dropped", dropped),
			zap.Int("maxAlarms", alarms.MaxAlarms), zap.Int("maxAlertAlarms", alarms.MaxAlertAlarms))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
