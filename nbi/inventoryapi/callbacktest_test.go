package inventoryapi

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// SOL 013's test of a callback before a subscription is accepted, through the callback policy: a
// receiver that answers the GET with 204 is subscribed; one that answers anything else, or nothing within
// CALLBACK_TEST_TIMEOUT, is a 400 saying what it answered and nothing is stored; CALLBACK_TEST=false
// accepts it untested.
func TestACallbackIsTestedWithAGetBeforeItsSubscriptionIsAccepted(t *testing.T) {
	se := newSubsEnv(t)
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	policy := func(cfg callback.Config) *callback.Policy {
		cfg.Allow = loopback
		p, err := callback.New(cfg)
		require.NoError(t, err)
		return p
	}
	postOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed) // an SMO that cannot answer the test
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer postOnly.Close()
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hanging.Close()
	defer close(release)
	good := smo.New()
	defer good.Close()

	post := func(cb string) *nbitest.Exchange {
		return se.send(http.MethodPost, subsPath, nbitest.JSONBody(t, map[string]any{"callback": cb}))
	}
	se.subs.WithPolicy(policy(callback.Config{}))
	require.Equal(t, http.StatusCreated, post(good.URL()).Code(), "a SOL 013 consumer answers the GET with 204")
	require.Zero(t, good.Attempts(), "the test is a GET, no notification")

	x := post(postOnly.URL + "/smo")
	nbitest.RequireCommonProblem(t, x, http.StatusBadRequest,
		"the callback was tested with a GET before accepting the subscription (ETSI NFV-SOL 013) and answered 405 Method Not Allowed; it must answer 204 No Content (or the operator runs with CALLBACK_TEST=false)", "")

	se.subs.WithPolicy(policy(callback.Config{TestTimeout: 300 * time.Millisecond}))
	x = post(hanging.URL + "/smo")
	nbitest.RequireCommonProblem(t, x, http.StatusBadRequest,
		"the callback was tested with a GET before accepting the subscription (ETSI NFV-SOL 013) and it did not answer within 300ms; it must answer 204 No Content (or the operator runs with CALLBACK_TEST=false)", "")

	listed := se.get(subsPath)
	require.Len(t, listed.Items(t), 1, "only the tested callback was stored")

	se.subs.WithPolicy(policy(callback.Config{SkipTest: true}))
	require.Equal(t, http.StatusCreated, post(postOnly.URL+"/smo").Code(), "CALLBACK_TEST=false accepts it untested")
}
