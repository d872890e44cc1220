package query

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func fmtArgs(format string, args []any) string { return fmt.Sprintf(format, args...) }

// equal fails the test when got and want are not deeply equal.
func equal(t *testing.T, got, want any, format string, args ...any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %#v\n want %#v", fmtArgs(format, args), got, want)
	}
}

// wantError checks that err is an *Error of the given status whose message contains want.
func wantError(t *testing.T, err error, status int, want string, format string, args ...any) {
	t.Helper()
	var e *Error
	switch {
	case err == nil:
		t.Errorf("%s: no error, want %d %q", fmtArgs(format, args), status, want)
	case !errors.As(err, &e):
		t.Errorf("%s: %T %v is not an *Error", fmtArgs(format, args), err, err)
	case e.Status != status || !strings.Contains(e.Message, want) || e.Error() != e.Message:
		t.Errorf("%s: got %d %q, want %d containing %q", fmtArgs(format, args), e.Status, e.Message, status, want)
	}
}
