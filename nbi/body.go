package nbi

import (
	"errors"
	"io"
	"net/http"

	"github.com/o2ims-operator/o2ims-operator/handlers/spec"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// ChainRules are the provisioning chain's rules that depend on how the operator runs.
type ChainRules struct {
	// Reserved are the selector keys the inventory owns (the chain refuses them in hosts[].selector).
	Reserved map[string]bool
	// Inventory tells whether hosts may be requested at all (NETBOX_URL is set).
	Inventory bool
}

// readBody reads a POST/PUT body: JSON, or YAML since the reference lists application/yaml for every
// body too (query.BodyMedia). A declared length beyond query.MaxBodyBytes is refused before reading; an
// undeclared one stops being read one byte past it.
func readBody(w http.ResponseWriter, r *http.Request) (media string, data []byte, err error) {
	mt, err := query.BodyMedia(r.Header.Get("Content-Type"))
	if err != nil {
		return "", nil, err
	}
	if r.ContentLength > query.MaxBodyBytes {
		return "", nil, query.TooLarge()
	}
	if rec, ok := w.(*recorder); ok {
		w = rec.ResponseWriter // MaxBytesReader tells the connection to close through the server's own writer
	}
	data, err = io.ReadAll(http.MaxBytesReader(w, r.Body, query.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return "", nil, query.TooLarge()
	case err != nil:
		return "", nil, newProblem(http.StatusBadRequest, "the body could not be read").withCause(err)
	}
	return mt, data, nil
}

// readData reads and checks a ProvisioningRequestData body; every refusal is a *query.Error (400, 413,
// 415) or a *problem.
func (s *Server) readData(w http.ResponseWriter, r *http.Request) (query.RequestData, error) {
	media, body, err := readBody(w, r)
	if err != nil {
		return query.RequestData{}, err
	}
	return query.ParseRequestData(media, body)
}

// checkChain (after the id's checks, which answer first) refuses what the provisioning chain would fail the request for, with the chain's own parser
// (handlers/spec): a 400 naming the field instead of a 201 for a request that is then failed.
func (s *Server) checkChain(d query.RequestData) error {
	req, err := spec.Parse(d.Spec(), s.cfg.Chain.Reserved)
	if err != nil {
		var fe *spec.FieldError
		if errors.As(err, &fe) {
			return newProblem(http.StatusBadRequest, "%s", fe.Qualified())
		}
		return newProblem(http.StatusBadRequest, "%v", err)
	}
	if len(req.Hosts) > 0 && !s.cfg.Chain.Inventory {
		return newProblem(http.StatusBadRequest,
			"templateParameters.hosts cannot be served: no inventory is configured on this operator (NETBOX_URL is not set)")
	}
	return nil
}
