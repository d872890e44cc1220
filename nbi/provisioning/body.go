package provisioning

import (
	"errors"
	"net/http"

	"github.com/o2ims-operator/o2ims-operator/api/spec"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// readData reads and checks a ProvisioningRequestData body; every refusal is a *query.Error (400, 413,
// 415) or a *nbi.Problem.
func readData(w http.ResponseWriter, r *http.Request) (query.RequestData, error) {
	media, body, err := nbi.ReadBody(w, r)
	if err != nil {
		return query.RequestData{}, err
	}
	return query.ParseRequestData(media, body)
}

// checkChain (after the id's checks, which answer first) refuses what the provisioning chain would fail
// the request for, with the chain's own parser (api/spec): a 400 naming the field instead of a 201
// for a request that is then failed.
func (a *API) checkChain(d query.RequestData) error {
	req, err := spec.Parse(d.Spec(), a.cfg.Chain.Reserved)
	if err != nil {
		var fe *spec.FieldError
		if errors.As(err, &fe) {
			return nbi.NewProblem(http.StatusBadRequest, "%s", fe.Qualified())
		}
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	if len(req.Hosts) > 0 && !a.cfg.Chain.Inventory {
		return nbi.NewProblem(http.StatusBadRequest,
			"templateParameters.hosts cannot be served: no inventory is configured on this operator (NETBOX_URL is not set)")
	}
	return nil
}
