package nbitest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// failureRecorder is a testing.TB that records a failure instead of failing the test.
type failureRecorder struct {
	testing.TB
	failed  bool
	message string
}

func (f *failureRecorder) Errorf(format string, args ...any) {
	f.failed = true
	f.message += fmt.Sprintf(format, args...)
}
func (f *failureRecorder) FailNow() { f.failed = true; panic(f) }
func (f *failureRecorder) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.FailNow()
}
func (f *failureRecorder) Helper() {}

// checkFails reports whether CheckAgainstReference refuses an exchange.
func checkFails(t *testing.T, method, path string, code int, contentType, body string) (failed bool, message string) {
	rec := &failureRecorder{TB: t}
	req, _ := http.NewRequest(method, "http://nbi"+path, nil)
	resp := &http.Response{StatusCode: code, Header: http.Header{}}
	if contentType != "" {
		resp.Header.Set("Content-Type", contentType)
	}
	func() {
		defer func() {
			if v := recover(); v != nil && v != any(rec) {
				panic(v)
			}
		}()
		CheckAgainstReference(rec, &Exchange{Req: req, Resp: resp, Body: []byte(body)}, nil)
	}()
	return rec.failed, rec.message
}

// The checker the integration tests rely on really refuses what the reference does not allow.
func TestTheReferenceCheckRefusesWrongShapes(t *testing.T) {
	now := "2026-11-30T10:00:00Z"
	good := `{"provisioningRequestData":{"provisioningRequestId":"a","name":"","description":"","templateName":"t","templateVersion":"v","templateParameters":{}},` +
		`"provisioningRequestReference":"u","status":{"updateTime":"` + now + `","message":"","provisioningPhase":"PENDING"},` +
		`"provisionedResourceSet":{"nodeClusterId":"","infrastructureResourceIds":[]}}`
	problem := func(status string) string {
		return `{"status":` + status + `,"title":"Not Found","detail":"x","instance":"` + NamedPath("a") + `","time":"` + now + `"}`
	}
	failed, msg := checkFails(t, http.MethodGet, NamedPath("a"), 200, query.MediaJSON, good)
	if failed {
		t.Fatalf("a correct Info was refused: %s", msg)
	}
	if failed, msg := checkFails(t, http.MethodGet, NamedPath("a"), 404, query.MediaJSON, problem(`"gone"`)); failed {
		t.Fatalf("a correct ProblemDetails was refused: %s", msg)
	}
	for name, c := range map[string]struct {
		code int
		body string
	}{
		"status an object":           {404, problem(`{"code":404}`)},
		"status a number":            {404, problem(`404`)},
		"an HTML error page":         {404, `<html>Not Found</html>`},
		"phase not in enum":          {200, strings.Replace(good, "PENDING", "UNKNOWN", 1)},
		"updateTime not a date-time": {200, strings.Replace(good, now, "yesterday", 1)},
		"no provisionedResourceSet":  {200, good[:strings.Index(good, `,"provisionedResourceSet"`)] + "}"},
		"description null":           {200, strings.Replace(good, `"description":""`, `"description":null`, 1)},
		"nodeClusterId absent":       {200, strings.Replace(good, `"nodeClusterId":"",`, ``, 1)},
	} {
		if failed, _ := checkFails(t, http.MethodGet, NamedPath("a"), c.code, query.MediaJSON, c.body); !failed {
			t.Errorf("%s was not refused", name)
		}
	}
}
