package provisioning

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// statusServer answers every request with a Kubernetes Status of the given code and reason, as an API
// server does; client-go decodes it into the error the NBI maps.
func statusServer(t *testing.T, code int, reason string, details string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the API server says %s","reason":%q,"code":%d%s}`,
			reason, reason, code, details)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func dynamicFor(t *testing.T, host string) dynamic.Interface {
	dyn, err := dynamic.NewForConfig(&rest.Config{Host: host, QPS: 1000, Burst: 1000})
	require.NoError(t, err)
	return dyn
}

func TestAPIServerErrorsMapToTheirAnswers(t *testing.T) {
	for _, c := range []struct {
		code    int
		reason  string
		details string
		want    int
		message string
	}{
		{400, "BadRequest", "", 400, "rejected"},
		{422, "Invalid", `,"details":{"name":"x","kind":"provisioningrequests","causes":[{"field":"spec.templateName","message":"Required value"}]}`, 400, "the API server says Invalid"},
		{409, "AlreadyExists", "", 409, "already exists"},
		{409, "Conflict", "", 409, "changed concurrently"},
		{404, "NotFound", "", 404, "not found"},
		{429, "TooManyRequests", `,"details":{"retryAfterSeconds":7}`, 503, "busy"},
		{500, "InternalError", "", 502, "did not complete"},
		{503, "ServiceUnavailable", "", 502, "did not complete"},
		{504, "Timeout", "", 502, "did not complete"},
		{403, "Forbidden", "", 502, "did not complete"}, // our own service account's permissions: not the caller's fault
		{401, "Unauthorized", "", 502, "did not complete"},
	} {
		t.Run(fmt.Sprintf("%d %s", c.code, c.reason), func(t *testing.T) {
			api := statusServer(t, c.code, c.reason, c.details)
			s := startStub(t, nbitest.NewMemStore(), dynamicFor(t, api.URL), nil)
			id := "mapped"
			for _, x := range []*nbitest.Exchange{
				s.Do(t, http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(id))),
				s.Do(t, http.MethodPut, nbitest.NamedPath(id), nbitest.JSONBody(t, nbitest.RequestBody(id))),
				s.Do(t, http.MethodDelete, nbitest.NamedPath(id), nil),
			} {
				require.Equal(t, c.want, x.Code(), "%s %s: %s", x.Req.Method, x.Req.URL.Path, x.Body)
				p := x.Problem(t)
				require.Contains(t, p.Status, c.message)
				if c.want == 502 {
					require.NotContains(t, p.Status, "the API server says", "upstream faults are logged, not echoed")
				}
				if c.code == 429 {
					require.Equal(t, "7", x.Resp.Header.Get("Retry-After"))
				}
			}
		})
	}
}

func TestAnAPIServerThatCannotBeReachedIs502(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	s := startStub(t, nbitest.NewMemStore(), dynamicFor(t, "http://"+addr), nil)
	x := s.Do(t, http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody("unreachable")))
	require.Equal(t, http.StatusBadGateway, x.Code())
	require.NotContains(t, string(x.Body), addr, "the transport error stays in the log")
	warned := s.Logs.FilterMessage("northbound request failed").FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, warned, 1)
	require.Contains(t, fmt.Sprint(warned[0].ContextMap()["cause"]), "connection refused")
}

func TestAnAPIServerThatDoesNotAnswerIsCutOffAfterAPITimeout(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })

	s := startStub(t, nbitest.NewMemStore(), dynamicFor(t, hang.URL), nil, func(c *nbi.Config) { c.APITimeout = 200 * time.Millisecond })
	x := s.Do(t, http.MethodPut, nbitest.NamedPath("slow"), nbitest.JSONBody(t, nbitest.RequestBody("slow")))
	require.Equal(t, http.StatusBadGateway, x.Code())
	cause := fmt.Sprint(s.Logs.FilterMessage("northbound request failed").All()[0].ContextMap()["cause"])
	require.True(t, strings.Contains(cause, "deadline") || strings.Contains(cause, "Timeout"), cause)
}

func TestWritesWithoutAClientAre503(t *testing.T) {
	s := startStub(t, nbitest.NewMemStore(), nil, nil)
	for _, x := range []*nbitest.Exchange{
		s.Do(t, http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody("noclient"))),
		s.Do(t, http.MethodPut, nbitest.NamedPath("noclient"), nbitest.JSONBody(t, nbitest.RequestBody("noclient"))),
		s.Do(t, http.MethodDelete, nbitest.NamedPath("noclient"), nil),
	} {
		require.Equal(t, http.StatusServiceUnavailable, x.Code())
		require.Contains(t, x.Problem(t).Status, "not configured")
	}
}

func TestTheOperatorsMissingPermissionIsABadGatewayNotTheCallersFault(t *testing.T) {
	kapi := kubeapi.Shared(t)
	// The tester has no RBAC: the real API server answers 403 to the NBI's write.
	dyn := dynamic.NewForConfigOrDie(kapi.ConfigForToken(kapi.TesterToken))
	s := startStub(t, nbitest.NewMemStore(), dyn, nil)
	x := s.Do(t, http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody("forbidden-upstream")))
	require.Equal(t, http.StatusBadGateway, x.Code())
}

func TestAnUnforeseenFailureIs500AndSaysNothingOfItsCause(t *testing.T) {
	store := nbitest.NewMemStore()
	store.Panic = true
	s := startStub(t, store, nil, nil)
	x := s.Do(t, http.MethodGet, nbitest.CollectionPath, nil)
	require.Equal(t, http.StatusInternalServerError, x.Code())
	require.Equal(t, nbi.Unservable, x.Problem(t).Status)
	require.NotContains(t, string(x.Body), "nobody foresaw")
	logged := s.Logs.FilterMessage("a request panicked").All()
	require.Len(t, logged, 1)
	require.Contains(t, fmt.Sprint(logged[0].ContextMap()["panic"]), "nobody foresaw")

	// The server goes on serving.
	store.Mu.Lock()
	store.Panic = false
	store.Mu.Unlock()
	require.Equal(t, http.StatusOK, s.Do(t, http.MethodGet, nbitest.CollectionPath, nil).Code())
}

func TestAStoreThatCannotBeReadIs503(t *testing.T) {
	store := nbitest.NewMemStore()
	store.Err = errors.New("cache not synced")
	s := startStub(t, store, nil, nil)
	require.Equal(t, http.StatusServiceUnavailable, s.Do(t, http.MethodGet, nbitest.CollectionPath, nil).Code())
	x := s.Do(t, http.MethodGet, nbitest.NamedPath("x"), nil)
	require.Equal(t, http.StatusServiceUnavailable, x.Code())
	require.NotContains(t, string(x.Body), "cache not synced")
}

func TestErrorMappingOfUnclassifiedErrors(t *testing.T) {
	require.Equal(t, http.StatusBadGateway, fromAPIError(context.DeadlineExceeded, "x").Code)
	require.Equal(t, http.StatusServiceUnavailable, fromAPIError(errClientNotConfigured, "x").Code)
	require.Nil(t, fromAPIError(nil, "x"))
	require.Equal(t, http.StatusInternalServerError, nbi.AsProblem(errors.New("bug")).Code)
}

func restConfig(host string) *rest.Config { return &rest.Config{Host: host, QPS: 1000, Burst: 1000} }

func fieldsString(entry observer.LoggedEntry) string { return fmt.Sprint(entry.ContextMap()) }
