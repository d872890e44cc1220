package nbitest

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

var (
	invRefOnce sync.Once
	invRef     *reference
	invRefErr  error
)

// LoadInventoryReference is the O2IMS Infrastructure Inventory OpenAPI 3.0 document, with the common
// document its $refs name beside it.
func LoadInventoryReference(t testing.TB) *reference {
	t.Helper()
	invRefOnce.Do(func() {
		invRef, invRefErr = buildReference("o2ims-inventory/resources/api/openapi.yaml", func(path string) *datamodel.DocumentConfiguration {
			return &datamodel.DocumentConfiguration{
				BasePath: filepath.Dir(path), SpecFilePath: filepath.Base(path), AllowFileReferences: true,
				// Resource.elements is an array of Resource: a legal recursion, not an infinite one.
				IgnoreArrayCircularReferences: true,
			}
		}, func(m *v3.Document) (*base.Schema, error) {
			// ProblemDetails lives in the common document: reach it through a response that names it.
			item := m.Paths.PathItems.GetOrZero("/o2ims-infrastructureInventory/v1/resourceTypes/{resourceTypeId}")
			return item.Get.Responses.Codes.GetOrZero("404").Content.GetOrZero("application/problem+json").Schema.Schema(), nil
		})
		if invRefErr == nil {
			invRef.notice, invRefErr = schema(invRef.model, "InventoryChangeNotification")
		}
	})
	require.NoError(t, invRefErr, "loading the O2IMS inventory reference")
	return invRef
}

// operation finds the reference's operation for a request path and method (nil: none).
func (r *reference) inventoryOperation(method, path string) *v3.Operation {
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

// CheckInventoryAgainstReference validates one exchange: every error is the reference's ProblemDetails
// (application/problem+json, integer status) with title, detail, instance and time; an answer the
// reference declares for the route, method and code matches its schema; a request that succeeded is one
// the reference describes.
// Under a v2 root the reference is oran-o2ims's current document (LoadInventoryV2Reference), under v1
// its last v1 document; either spelling of the root is read as oran-o2ims's.
func CheckInventoryAgainstReference(t testing.TB, x *Exchange, reqBody []byte) {
	t.Helper()
	if MajorOf(x.Req.URL.Path) == "v2" {
		checkO2IMSAgainst(t, LoadInventoryV2Reference(t), x, reqBody, "")
		return
	}
	checkO2IMSAgainst(t, LoadInventoryReference(t), x, reqBody, "")
}

// checkO2IMSAgainst is CheckInventoryAgainstReference against r, one of the oran-o2ims references
// (inventory, alarms), which share their common document and so their ProblemDetails.
// The path is read as the reference names it (canonicalO2IMS): the specification's spelling of a root is
// an alias of oran-o2ims's, and asMajor ("" none) the major version segment the reference's paths use.
func checkO2IMSAgainst(t testing.TB, r *reference, x *Exchange, reqBody []byte, asMajor string) {
	t.Helper()
	code := x.Code()
	media := x.Resp.Header.Get("Content-Type")
	jsonBody := x.Body
	if media == query.MediaYAML && len(x.Body) > 0 {
		var err error
		jsonBody, err = yaml.YAMLToJSON(x.Body)
		require.NoError(t, err, "answer %d is not YAML: %s", code, x.Body)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if code >= 400 {
		if media != query.MediaYAML {
			require.Equal(t, "application/problem+json", media, "error %d: %s", code, x.Body)
		}
		pd, _ := r.checkProblem(t, code, jsonBody, x.Body)
		require.EqualValues(t, code, pd["status"], "status is the HTTP code")
		require.True(t, strings.HasSuffix(pd["instance"].(string), x.Req.URL.EscapedPath()), "instance is the request's URL: %v", pd["instance"])
	} else if len(x.Body) > 0 {
		require.Contains(t, []string{query.MediaJSON, query.MediaYAML}, media)
	}
	u := canonicalO2IMS(x.Req.URL, asMajor)
	op := r.inventoryOperation(x.Req.Method, u.Path)
	if op == nil {
		return
	}
	if op.Responses.Codes.GetOrZero(strconv.Itoa(code)) != nil {
		vreq, err := http.NewRequest(x.Req.Method, u.String(), bytes.NewReader(reqBody))
		require.NoError(t, err)
		vreq.Header = x.Req.Header.Clone()
		vresp := &http.Response{StatusCode: code, Header: x.Resp.Header.Clone(), Request: vreq, Body: io.NopCloser(bytes.NewReader(jsonBody))}
		if media == query.MediaYAML {
			vresp.Header.Set("Content-Type", query.MediaJSON)
			if code >= 400 {
				vresp.Header.Set("Content-Type", "application/problem+json")
			}
		}
		r.checkResponse(t, x, vreq, vresp)
	}
	if code < 300 {
		vreq, err := http.NewRequest(x.Req.Method, u.String(), bytes.NewReader(reqBody))
		require.NoError(t, err)
		vreq.Header = x.Req.Header.Clone()
		r.checkRequest(t, x, vreq)
	}
}

// CheckNotification checks a notification's body against the inventory reference's
// InventoryChangeNotification.
func CheckNotification(t testing.TB, body []byte) {
	t.Helper()
	ref := LoadInventoryReference(t)
	ref.mu.Lock()
	ok, errs := ref.schemas.ValidateSchemaBytes(ref.notice, body)
	ref.mu.Unlock()
	require.True(t, ok, "not an InventoryChangeNotification: %s\n%s", describe(errs), body)
}
