package provisioning

import (
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/o2ims-operator/o2ims-operator/nbi"
)

// errClientNotConfigured stands for a write the operator cannot send: no Kubernetes client was given.
var errClientNotConfigured = errors.New("the Kubernetes API client is not configured")

// fromAPIError maps what the API server (or the way to it) answered a write with. What the caller got
// wrong travels through as 400/404/409; the caller is not told about the API server's own faults (5xx,
// transport, timeout, our service account's missing permissions) beyond a 502, and rate limiting becomes
// a 503 the caller may retry.
func fromAPIError(err error, id string) *nbi.Problem {
	if err == nil {
		return nil
	}
	if errors.Is(err, errClientNotConfigured) {
		return nbi.NewProblem(http.StatusServiceUnavailable,
			"the Kubernetes API server cannot be reached: its client is not configured").WithCause(err)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		switch st.Code {
		case http.StatusBadRequest, http.StatusUnprocessableEntity:
			return nbi.NewProblem(http.StatusBadRequest, "the Kubernetes API server rejected provisioning request %q: %s",
				id, st.Message).WithCause(err)
		case http.StatusConflict:
			if apierrors.IsAlreadyExists(err) {
				return nbi.NewProblem(http.StatusConflict, "provisioning request %q already exists", id).WithCause(err)
			}
			return nbi.NewProblem(http.StatusConflict, "provisioning request %q was changed concurrently: %s",
				id, st.Message).WithCause(err)
		case http.StatusNotFound:
			return nbi.NewProblem(http.StatusNotFound, "provisioning request %q not found", id).WithCause(err)
		case http.StatusTooManyRequests:
			p := nbi.NewProblem(http.StatusServiceUnavailable,
				"the Kubernetes API server is busy; retry later").WithCause(err)
			if secs, ok := apierrors.SuggestsClientDelay(err); ok && secs > 0 {
				p.WithHeader("Retry-After", strconv.Itoa(secs))
			}
			return p
		}
	}
	return nbi.NewProblem(http.StatusBadGateway,
		"the Kubernetes API server did not complete the request").WithCause(err)
}
