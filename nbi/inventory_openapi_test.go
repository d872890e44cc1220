package nbi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// inventoryReference is the O2IMS Infrastructure Inventory OpenAPI 3.0 document (with the common
// document its $refs name beside it), validated against by libopenapi-validator as the provisioning
// one is.
type inventoryReference struct {
	mu        sync.Mutex
	model     *v3.Document
	responses validator.Validator
	requests  validator.Validator
	schemas   schema_validation.SchemaValidator
	problem   *base.Schema
	notice    *base.Schema // InventoryChangeNotification
}

var (
	invRefOnce sync.Once
	invRef     *inventoryReference
	invRefErr  error
)

func loadInventoryReference(t testing.TB) *inventoryReference {
	t.Helper()
	invRefOnce.Do(func() {
		invRef, invRefErr = buildInventoryReference()
	})
	require.NoError(t, invRefErr, "loading the O2IMS inventory reference")
	return invRef
}

func buildInventoryReference() (*inventoryReference, error) {
	path, err := kubeapi.ReferenceFile("o2ims-inventory/resources/api/openapi.yaml")
	if err != nil {
		return nil, err
	}
	spec, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocumentWithConfiguration(spec, &datamodel.DocumentConfiguration{
		BasePath: filepath.Dir(path), SpecFilePath: filepath.Base(path), AllowFileReferences: true,
		// Resource.elements is an array of Resource: a legal recursion, not an infinite one.
		IgnoreArrayCircularReferences: true,
	})
	if err != nil {
		return nil, err
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, err
	}
	r := &inventoryReference{model: &m.Model}
	var errs []error
	if r.responses, errs = validator.NewValidator(doc, config.WithFormatAssertions()); len(errs) > 0 {
		return nil, errs[0]
	}
	if r.requests, errs = validator.NewValidator(doc, config.WithFormatAssertions(), config.WithoutSecurityValidation()); len(errs) > 0 {
		return nil, errs[0]
	}
	r.schemas = schema_validation.NewSchemaValidator(config.WithFormatAssertions())
	// ProblemDetails lives in the common document: reach it through a response that names it.
	item := m.Model.Paths.PathItems.GetOrZero("/o2ims-infrastructureInventory/v1/resourceTypes/{resourceTypeId}")
	r.problem = item.Get.Responses.Codes.GetOrZero("404").Content.GetOrZero("application/problem+json").Schema.Schema()
	n, ok := m.Model.Components.Schemas.Get("InventoryChangeNotification")
	if !ok {
		return nil, os.ErrNotExist
	}
	r.notice = n.Schema()
	return r, nil
}

// operation finds the reference's operation for a request path and method (nil: none).
func (r *inventoryReference) operation(method, path string) *v3.Operation {
	for tmpl, item := range r.model.Paths.PathItems.FromOldest() {
		if matchTemplate(tmpl, path) {
			return item.GetOperations().GetOrZero(strings.ToLower(method))
		}
	}
	return nil
}

func matchTemplate(tmpl, path string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if strings.HasPrefix(ts[i], "{") {
			if ps[i] == "" {
				return false
			}
			continue
		}
		if ts[i] != ps[i] {
			return false
		}
	}
	return true
}

// checkInventoryAgainstReference validates one exchange: every error is the reference's ProblemDetails
// (application/problem+json, integer status) with title, detail, instance and time; an answer the
// reference declares for the route, method and code matches its schema; a request that succeeded is one
// the reference describes.
func checkInventoryAgainstReference(t testing.TB, x *exchange, reqBody []byte) {
	t.Helper()
	r := loadInventoryReference(t)
	code := x.code()
	media := x.resp.Header.Get("Content-Type")
	jsonBody := x.body
	if media == mediaYAML && len(x.body) > 0 {
		var err error
		jsonBody, err = yaml.YAMLToJSON(x.body)
		require.NoError(t, err, "answer %d is not YAML: %s", code, x.body)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if code >= 400 {
		if media != mediaYAML {
			require.Equal(t, mediaProblemJSON, media, "error %d: %s", code, x.body)
		}
		ok, errs := r.schemas.ValidateSchemaBytes(r.problem, jsonBody)
		require.True(t, ok, "error %d is not a ProblemDetails: %s\n%s", code, describe(errs), x.body)
		var pd map[string]any
		require.NoError(t, json.Unmarshal(jsonBody, &pd))
		require.EqualValues(t, code, pd["status"], "status is the HTTP code")
		require.Equal(t, http.StatusText(code), pd["title"])
		require.NotEmpty(t, pd["detail"])
		require.True(t, strings.HasSuffix(pd["instance"].(string), x.req.URL.EscapedPath()), "instance is the request's URL: %v", pd["instance"])
		_, err := time.Parse(time.RFC3339, pd["time"].(string))
		require.NoError(t, err)
	} else if len(x.body) > 0 {
		require.Contains(t, []string{mediaJSON, mediaYAML}, media)
	}
	op := r.operation(x.req.Method, x.req.URL.Path)
	if op == nil {
		return
	}
	if op.Responses.Codes.GetOrZero(strconv.Itoa(code)) != nil {
		vreq, err := http.NewRequest(x.req.Method, x.req.URL.String(), bytes.NewReader(reqBody))
		require.NoError(t, err)
		vreq.Header = x.req.Header.Clone()
		vresp := &http.Response{StatusCode: code, Header: x.resp.Header.Clone(), Request: vreq, Body: io.NopCloser(bytes.NewReader(jsonBody))}
		if media == mediaYAML {
			vresp.Header.Set("Content-Type", mediaJSON)
			if code >= 400 {
				vresp.Header.Set("Content-Type", mediaProblemJSON)
			}
		}
		ok, errs := r.responses.ValidateHttpResponse(vreq, vresp)
		require.True(t, ok, "%s %s → %d does not match the reference: %s\n%s", x.req.Method, x.req.URL, code, describe(errs), x.body)
	}
	if code < 300 {
		vreq, err := http.NewRequest(x.req.Method, x.req.URL.String(), bytes.NewReader(reqBody))
		require.NoError(t, err)
		vreq.Header = x.req.Header.Clone()
		ok, errs := r.requests.ValidateHttpRequest(vreq)
		require.True(t, ok, "%s %s succeeded but is not a request the reference describes: %s", x.req.Method, x.req.URL, describe(errs))
	}
}
