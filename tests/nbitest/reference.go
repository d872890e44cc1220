package nbitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// reference is an O2IMS OpenAPI document in testdata/reference, read by libopenapi and validated against
// by libopenapi-validator: the provisioning API's (OAS 3.1, JSON Schema 2020-12) or the inventory's (OAS
// 3.0, with the common document its $refs name beside it).
type reference struct {
	mu        sync.Mutex // the validators keep caches; one exchange at a time
	model     *v3.Document
	responses validator.Validator
	requests  validator.Validator
	schemas   schema_validation.SchemaValidator
	problem   *base.Schema
	notice    *base.Schema // the inventory's InventoryChangeNotification (nil for provisioning)
}

// buildReference reads the document at the reference path rel with cfg (nil: the defaults); problem
// finds its ProblemDetails schema.
func buildReference(rel string, cfg func(path string) *datamodel.DocumentConfiguration, problem func(*v3.Document) (*base.Schema, error)) (*reference, error) {
	path, err := kubeapi.ReferenceFile(rel)
	if err != nil {
		return nil, err
	}
	spec, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc libopenapi.Document
	if cfg != nil {
		doc, err = libopenapi.NewDocumentWithConfiguration(spec, cfg(path))
	} else {
		doc, err = libopenapi.NewDocument(spec)
	}
	if err != nil {
		return nil, err
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, err
	}
	r := &reference{model: &m.Model}
	var errs []error
	// Format assertions: updateTime must really be a date-time.
	if r.responses, errs = validator.NewValidator(doc, config.WithFormatAssertions()); len(errs) > 0 {
		return nil, errs[0]
	}
	// The requests the tests send carry no token when authentication is off; the security scheme is
	// the NBI's business (auth_test.go), not the request shape's.
	if r.requests, errs = validator.NewValidator(doc, config.WithFormatAssertions(), config.WithoutSecurityValidation()); len(errs) > 0 {
		return nil, errs[0]
	}
	r.schemas = schema_validation.NewSchemaValidator(config.WithFormatAssertions())
	if r.problem, err = problem(&m.Model); err != nil {
		return nil, err
	}
	return r, nil
}

// schema is a component schema of the document by name.
func schema(m *v3.Document, name string) (*base.Schema, error) {
	s, ok := m.Components.Schemas.Get(name)
	if !ok {
		return nil, fmt.Errorf("the reference has no schema %s: %w", name, os.ErrNotExist)
	}
	return s.Schema(), nil
}

var (
	refOnce sync.Once
	ref     *reference
	refErr  error
)

func loadReference(t testing.TB) *reference {
	t.Helper()
	refOnce.Do(func() {
		ref, refErr = buildReference("o2ims_provisioning_v1_1.yaml", nil, func(m *v3.Document) (*base.Schema, error) {
			return schema(m, "O2ims_infrastructureProvisioning.ProblemDetails")
		})
	})
	require.NoError(t, refErr, "loading the O2IMS reference")
	return ref
}

// checkProblem checks an error body against the reference's ProblemDetails with title (the reason
// phrase), detail and an RFC 3339 time beside the status, and returns it for the API's own checks.
func (r *reference) checkProblem(t testing.TB, code int, jsonBody, body []byte) (pd map[string]any, at time.Time) {
	t.Helper()
	ok, errs := r.schemas.ValidateSchemaBytes(r.problem, jsonBody)
	require.True(t, ok, "error %d is not a ProblemDetails: %s\n%s", code, describe(errs), body)
	require.NoError(t, json.Unmarshal(jsonBody, &pd))
	require.Equal(t, http.StatusText(code), pd["title"], "title is the reason phrase")
	require.NotEmpty(t, pd["detail"])
	at, err := time.Parse(time.RFC3339, pd["time"].(string))
	require.NoError(t, err, "time is RFC 3339")
	return pd, at
}

// checkResponse validates an answer the reference declares for its route, method and code.
func (r *reference) checkResponse(t testing.TB, x *Exchange, vreq *http.Request, vresp *http.Response) {
	t.Helper()
	ok, errs := r.responses.ValidateHttpResponse(vreq, vresp)
	require.True(t, ok, "%s %s → %d does not match the reference: %s\n%s", x.Req.Method, x.Req.URL, x.Code(), describe(errs), x.Body)
}

// checkRequest validates a request that succeeded: it must be one the reference describes.
func (r *reference) checkRequest(t testing.TB, x *Exchange, vreq *http.Request) {
	t.Helper()
	ok, errs := r.requests.ValidateHttpRequest(vreq)
	require.True(t, ok, "%s %s succeeded but is not a request the reference describes: %s", x.Req.Method, x.Req.URL, describe(errs))
}

// operation finds the reference's operation for a request path (either API root) and method.
func (r *reference) operation(method, path string) *v3.Operation {
	path = canonicalPath(path)
	var item *v3.PathItem
	switch {
	case path == CollectionPath:
		item = r.model.Paths.PathItems.GetOrZero(CollectionPath)
	case strings.HasPrefix(path, CollectionPath+"/") && !strings.Contains(path[len(CollectionPath)+1:], "/"):
		item = r.model.Paths.PathItems.GetOrZero(CollectionPath + "/{provisioningRequestId}")
	}
	if item == nil {
		return nil
	}
	return item.GetOperations().GetOrZero(strings.ToLower(method))
}

// The provisioning API's roots as the reference spells them, and the lowercase form served alike.
const (
	ProvisioningRoot      = "/O2ims_infrastructureProvisioning"
	provisioningRootLower = "/o2ims-infrastructureProvisioning"
	// CollectionPath is the provisioning requests' collection.
	CollectionPath = ProvisioningRoot + "/v1/provisioningRequests"
)

// NamedPath is the path of one provisioning request.
func NamedPath(id string) string { return CollectionPath + "/" + id }

func canonicalPath(p string) string {
	if strings.HasPrefix(p, provisioningRootLower) {
		return ProvisioningRoot + strings.TrimPrefix(p, provisioningRootLower)
	}
	return p
}

// CheckAgainstReference validates one exchange: an answer the reference declares for the route, method
// and code must match its schema (libopenapi-validator on the real request/response pair); every error
// body must be the reference's ProblemDetails with title, detail, instance and time beside the status; a
// request that succeeded must be one the reference describes.
func CheckAgainstReference(t testing.TB, x *Exchange, reqBody []byte) {
	t.Helper()
	r := loadReference(t)
	code := x.Code()
	media := x.Resp.Header.Get("Content-Type")
	jsonBody := x.Body
	if len(x.Body) > 0 {
		require.Contains(t, []string{query.MediaJSON, query.MediaYAML}, media, "answer %d has Content-Type %q", code, media)
		if media == query.MediaYAML {
			var err error
			jsonBody, err = yaml.YAMLToJSON(x.Body)
			require.NoError(t, err, "answer %d is not YAML: %s", code, x.Body)
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()

	if code >= 400 {
		require.NotEmpty(t, x.Body, "error %d without a body", code)
		pd, tm := r.checkProblem(t, code, jsonBody, x.Body)
		require.IsType(t, "", pd["status"], "ProblemDetails.status must be a string: %s", x.Body)
		require.NotEmpty(t, pd["status"])
		require.Equal(t, x.Req.URL.Path, pd["instance"], "instance is the request path")
		require.Equal(t, time.UTC, tm.Location(), "time is UTC")
	}

	op := r.operation(x.Req.Method, x.Req.URL.Path)
	if op == nil {
		return // api_versions and unknown routes: checked by their tests / as ProblemDetails above
	}
	if op.Responses.Codes.GetOrZero(strconv.Itoa(code)) != nil {
		vreq := validationRequest(t, x.Req, reqBody)
		vresp := &http.Response{
			StatusCode: code, Header: x.Resp.Header.Clone(), Request: vreq,
			Body: io.NopCloser(bytes.NewReader(jsonBody)),
		}
		if len(x.Body) > 0 {
			vresp.Header.Set("Content-Type", query.MediaJSON) // same schema under both media types
		}
		r.checkResponse(t, x, vreq, vresp)
	}
	if code < 300 {
		body := reqBody
		if len(body) > 0 {
			// The reference requires name and description in a request too; the API deliberately takes
			// their absence as "" (the Python NBI did, and the CRD does not need them), so a request is
			// checked as the one it is taken to be.
			var data map[string]any
			require.NoError(t, yaml.Unmarshal(body, &data))
			for _, f := range []string{"name", "description"} {
				if _, ok := data[f]; !ok {
					data[f] = ""
				}
			}
			var err error
			body, err = json.Marshal(data)
			require.NoError(t, err)
		}
		vreq := validationRequest(t, x.Req, body)
		if len(body) > 0 {
			vreq.Header.Set("Content-Type", query.MediaJSON)
		}
		r.checkRequest(t, x, vreq)
	}
}

// validationRequest is the request as the reference names its path (the lowercase root is ours).
func validationRequest(t testing.TB, orig *http.Request, body []byte) *http.Request {
	t.Helper()
	u := *orig.URL
	u.Path = canonicalPath(u.Path)
	u.RawPath = ""
	req, err := http.NewRequest(orig.Method, u.String(), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = orig.Header.Clone()
	return req
}

func describe(errs []*liberrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Message + ": " + e.Reason)
		for _, s := range e.SchemaValidationErrors {
			b.WriteString("\n    " + s.Reason + " at " + s.FieldPath)
		}
		b.WriteString("\n")
	}
	return b.String()
}
