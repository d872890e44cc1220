package callback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The test of a callback before its subscription is accepted (ETSI GS NFV-SOL 013 clause 5.9 / 8.5, the
// subscribe/notify pattern O2IMS clauses 3.2.5 and 3.3.5 adopt; oran-o2ims does it): the producer sends a
// GET to the callback URI and the consumer answers 204 No Content. It goes through the policy's Client
// (every connection checked, no proxy, no redirect), so it reaches nothing a delivery could not.

// DefaultTestTimeout bounds the test when CALLBACK_TEST_TIMEOUT is not set; MaxTestTimeout is the most
// it may be set to (the NBI's WriteTimeout leaves room for it: a subscription's POST waits for the test).
const (
	DefaultTestTimeout = 5 * time.Second
	MaxTestTimeout     = time.Minute
)

// TestFailedError is a callback that did not answer the test as SOL 013 has it: what it answered (a
// status, a transport failure, the policy's refusal), for the subscriber to fix — a 400 of the NBI.
type TestFailedError struct{ Detail string }

func (e *TestFailedError) Error() string { return e.Detail }

// HTTPAnswer is how the NBI answers it (nbi.Answerer): 400, saying what the callback answered.
func (e *TestFailedError) HTTPAnswer() (status int, detail string, retryAfter int) {
	return http.StatusBadRequest, e.Detail, 0
}

// TestCallback GETs raw and wants 204 within the configured bound (CALLBACK_TEST_TIMEOUT); nil when it
// did, or when the test is off (CALLBACK_TEST=false, for SMOs that cannot answer a GET). The answer's
// body is not read beyond a few bytes, and never quoted back.
func (p *Policy) TestCallback(ctx context.Context, raw string) error {
	if p.cfg.SkipTest {
		return nil
	}
	timeout := p.cfg.TestTimeout
	if timeout <= 0 {
		timeout = DefaultTestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return &TestFailedError{Detail: fmt.Sprintf("the callback cannot be tested: %v", err)}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.Client(timeout).Do(req)
	if err != nil {
		var why string
		var ex Explained
		switch {
		case errors.As(err, &ex):
			why = ex.Explain()
		case Refusal(err) != nil:
			why = Refusal(err).Error()
		case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout"):
			why = "it did not answer within " + timeout.String()
		default:
			why = "it could not be reached"
		}
		return &TestFailedError{Detail: "the callback was tested with a GET before accepting the subscription (ETSI NFV-SOL 013) and " + why +
			"; it must answer 204 No Content (or the operator runs with CALLBACK_TEST=false)"}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return &TestFailedError{Detail: "the callback was tested with a GET before accepting the subscription (ETSI NFV-SOL 013) and answered " +
			strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode) + "; it must answer 204 No Content (or the operator runs with CALLBACK_TEST=false)"}
	}
	return nil
}

// Explained is an error of an Outgoing (outgoing.go) that says why the request was not sent in words the
// subscriber may read (no secret, no address): the test's answer quotes it.
type Explained interface {
	error
	Explain() string
}

// testConfigFromEnv reads CALLBACK_TEST and CALLBACK_TEST_TIMEOUT into c.
func testConfigFromEnv(get func(string) string, c *Config) error {
	if v := get("CALLBACK_TEST"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("CALLBACK_TEST=%q: want true or false", v)
		}
		c.SkipTest = !b
	}
	if v := get("CALLBACK_TEST_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxTestTimeout {
			return fmt.Errorf("CALLBACK_TEST_TIMEOUT=%q: want a duration from 1ms to 1m, such as 5s", v)
		}
		c.TestTimeout = d
	}
	return nil
}
