package nbi

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

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
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
			s := startStub(t, newMemStore(), dynamicFor(t, api.URL), nil)
			id := "mapped"
			for _, x := range []*exchange{
				s.do(t, http.MethodPost, collectionPath, jsonBody(t, requestBody(id))),
				s.do(t, http.MethodPut, namedPath(id), jsonBody(t, requestBody(id))),
				s.do(t, http.MethodDelete, namedPath(id), nil),
			} {
				require.Equal(t, c.want, x.code(), "%s %s: %s", x.req.Method, x.req.URL.Path, x.body)
				p := x.problem(t)
				require.Contains(t, p.Status, c.message)
				if c.want == 502 {
					require.NotContains(t, p.Status, "the API server says", "upstream faults are logged, not echoed")
				}
				if c.code == 429 {
					require.Equal(t, "7", x.resp.Header.Get("Retry-After"))
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

	s := startStub(t, newMemStore(), dynamicFor(t, "http://"+addr), nil)
	x := s.do(t, http.MethodPost, collectionPath, jsonBody(t, requestBody("unreachable")))
	require.Equal(t, http.StatusBadGateway, x.code())
	require.NotContains(t, string(x.body), addr, "the transport error stays in the log")
	warned := s.logs.FilterMessage("northbound request failed").FilterLevelExact(zapcore.WarnLevel).All()
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

	s := startStub(t, newMemStore(), dynamicFor(t, hang.URL), nil, func(c *Config) { c.APITimeout = 200 * time.Millisecond })
	x := s.do(t, http.MethodPut, namedPath("slow"), jsonBody(t, requestBody("slow")))
	require.Equal(t, http.StatusBadGateway, x.code())
	cause := fmt.Sprint(s.logs.FilterMessage("northbound request failed").All()[0].ContextMap()["cause"])
	require.True(t, strings.Contains(cause, "deadline") || strings.Contains(cause, "Timeout"), cause)
}

func TestWritesWithoutAClientAre503(t *testing.T) {
	s := startStub(t, newMemStore(), nil, nil)
	for _, x := range []*exchange{
		s.do(t, http.MethodPost, collectionPath, jsonBody(t, requestBody("noclient"))),
		s.do(t, http.MethodPut, namedPath("noclient"), jsonBody(t, requestBody("noclient"))),
		s.do(t, http.MethodDelete, namedPath("noclient"), nil),
	} {
		require.Equal(t, http.StatusServiceUnavailable, x.code())
		require.Contains(t, x.problem(t).Status, "not configured")
	}
}

func TestTheOperatorsMissingPermissionIsABadGatewayNotTheCallersFault(t *testing.T) {
	kapi := kubeapi.Shared(t)
	// The tester has no RBAC: the real API server answers 403 to the NBI's write.
	dyn := dynamic.NewForConfigOrDie(kapi.ConfigForToken(kapi.TesterToken))
	s := startStub(t, newMemStore(), dyn, nil)
	x := s.do(t, http.MethodPost, collectionPath, jsonBody(t, requestBody("forbidden-upstream")))
	require.Equal(t, http.StatusBadGateway, x.code())
}

func TestAnUnforeseenFailureIs500AndSaysNothingOfItsCause(t *testing.T) {
	store := newMemStore()
	store.panic = true
	s := startStub(t, store, nil, nil)
	x := s.do(t, http.MethodGet, collectionPath, nil)
	require.Equal(t, http.StatusInternalServerError, x.code())
	require.Equal(t, unservable, x.problem(t).Status)
	require.NotContains(t, string(x.body), "nobody foresaw")
	logged := s.logs.FilterMessage("a request panicked").All()
	require.Len(t, logged, 1)
	require.Contains(t, fmt.Sprint(logged[0].ContextMap()["panic"]), "nobody foresaw")

	// The server goes on serving.
	store.mu.Lock()
	store.panic = false
	store.mu.Unlock()
	require.Equal(t, http.StatusOK, s.do(t, http.MethodGet, collectionPath, nil).code())
}

func TestAStoreThatCannotBeReadIs503(t *testing.T) {
	store := newMemStore()
	store.err = errors.New("cache not synced")
	s := startStub(t, store, nil, nil)
	require.Equal(t, http.StatusServiceUnavailable, s.do(t, http.MethodGet, collectionPath, nil).code())
	x := s.do(t, http.MethodGet, namedPath("x"), nil)
	require.Equal(t, http.StatusServiceUnavailable, x.code())
	require.NotContains(t, string(x.body), "cache not synced")
}

func TestErrorMappingOfUnclassifiedErrors(t *testing.T) {
	require.Equal(t, http.StatusBadGateway, fromAPIError(context.DeadlineExceeded, "x").code)
	require.Equal(t, http.StatusServiceUnavailable, fromAPIError(errClientNotConfigured, "x").code)
	require.Nil(t, fromAPIError(nil, "x"))
	require.Equal(t, http.StatusInternalServerError, asProblem(errors.New("bug")).code)
}

// A refusal of package query is answered with its status and message, and nothing else.
func TestQueryRefusalsKeepTheirStatusAndMessage(t *testing.T) {
	for _, err := range []error{query.TooLarge(), &query.Error{Status: http.StatusUnsupportedMediaType, Message: "m"},
		fmt.Errorf("wrapped: %w", &query.Error{Status: http.StatusBadRequest, Message: "bad"})} {
		var q *query.Error
		require.True(t, errors.As(err, &q))
		p := asProblem(err)
		require.Equal(t, &problem{code: q.Status, message: q.Message}, p)
		require.Equal(t, fmt.Sprintf("%d %s", q.Status, q.Message), p.Error())
		require.NoError(t, p.Unwrap())
	}
	p := newProblem(http.StatusBadGateway, "down").withCause(errors.New("dial"))
	require.Equal(t, "502 down: dial", p.Error())
	require.EqualError(t, p.Unwrap(), "dial")
}

func restConfig(host string) *rest.Config { return &rest.Config{Host: host, QPS: 1000, Burst: 1000} }

func fieldsString(entry observer.LoggedEntry) string { return fmt.Sprint(entry.ContextMap()) }
