package bearer

import "net/http"

// RefuseRedirects is an http.Client CheckRedirect that follows no redirect and fails with err: following
// one would send the Authorization header to a place nobody configured. (http.ErrUseLastResponse would
// hand the 3xx to the caller as an answer; an API client has no use for it.)
func RefuseRedirects(err error) func(*http.Request, []*http.Request) error {
	return func(*http.Request, []*http.Request) error { return err }
}
