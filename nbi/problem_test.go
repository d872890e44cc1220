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
