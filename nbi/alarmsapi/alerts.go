package alarmsapi

import (
	"net/http"
	"time"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// AlertmanagerPath is where Alertmanager posts its webhook (a receiver's webhook_configs url): on the
// same listener and authentication as the API (a bearer token with create on provisioningrequests when
// NBI_AUTH=kubernetes). Not a path of the reference, which declares the payload (AlertmanagerNotification)
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
	var raised, cleared int
	_, err = a.store.Update(ctx, func(s *alarms.State) (bool, error) {
		var changed bool
		changed, raised, cleared = a.alerts.Apply(s, &n, time.Now().UTC())
		return changed, nil
	})
	if err != nil {
		return storeError(err)
	}
	a.metrics.Counted(alarms.AlertFiring, raised, cleared)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
