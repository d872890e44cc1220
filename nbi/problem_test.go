package nbi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// A refusal of package query is answered with its status and message, and nothing else.
func TestQueryRefusalsKeepTheirStatusAndMessage(t *testing.T) {
	for _, err := range []error{query.TooLarge(), &query.Error{Status: http.StatusUnsupportedMediaType, Message: "m"},
		fmt.Errorf("wrapped: %w", &query.Error{Status: http.StatusBadRequest, Message: "bad"})} {
		var q *query.Error
		require.True(t, errors.As(err, &q))
		p := AsProblem(err)
		require.Equal(t, &Problem{Code: q.Status, Message: q.Message}, p)
		require.Equal(t, fmt.Sprintf("%d %s", q.Status, q.Message), p.Error())
		require.NoError(t, p.Unwrap())
	}
	p := NewProblem(http.StatusBadGateway, "down").WithCause(errors.New("dial"))
	require.Equal(t, "502 down: dial", p.Error())
	require.EqualError(t, p.Unwrap(), "dial")
}

// slowAnswer is an error of a package below the shell that knows its answer, retryable.
type slowAnswer struct{}

func (slowAnswer) Error() string { return "not now" }
func (slowAnswer) HTTPAnswer() (int, string, int) {
	return http.StatusServiceUnavailable, "not now; retry later", 5
}

// An Answerer, however wrapped, is answered as it says, with its Retry-After; none without one.
func TestAnAnswererIsAnsweredAsItSays(t *testing.T) {
	p := AsProblem(fmt.Errorf("creating: %w", slowAnswer{}))
	require.Equal(t, http.StatusServiceUnavailable, p.Code)
	require.Equal(t, "not now; retry later", p.Message)
	require.Equal(t, http.Header{"Retry-After": {"5"}}, p.Header)
	require.NoError(t, p.Unwrap(), "the detail is the caller's; nothing more for the log")
	require.Nil(t, AsProblem(query.TooLarge()).Header)
}
