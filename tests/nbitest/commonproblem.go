package nbitest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RequireCommonProblem pins an answer of an API on the O2IMS common reference (inventory, alarms) whole:
// application/problem+json, the Retry-After header ("" for none), and a body of exactly status, title
// (the reason phrase), detail, instance (the request's absolute URL) and time (RFC 3339, UTC, of now).
func RequireCommonProblem(t testing.TB, x *Exchange, code int, detail, retryAfter string) {
	t.Helper()
	require.Equal(t, code, x.Code(), "%s", x.Body)
	require.Equal(t, "application/problem+json", x.Resp.Header.Get("Content-Type"))
	require.Equal(t, retryAfter, x.Resp.Header.Get("Retry-After"))
	got := x.Object(t)
	at, err := time.Parse(time.RFC3339, got["time"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), at, time.Minute)
	delete(got, "time")
	require.Equal(t, map[string]any{"status": float64(code), "title": http.StatusText(code), "detail": detail,
		"instance": x.Req.URL.String()}, got)
}
