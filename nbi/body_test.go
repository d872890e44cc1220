package nbi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// What a body that is accepted becomes, an unstructured object can hold (DeepCopyJSONValue panics on
// anything else); the fuzz target of package query checks the same without apimachinery.
func TestAnAcceptedSpecIsAnUnstructuredValue(t *testing.T) {
	for media, body := range map[string]string{
		mediaJSON: `{"provisioningRequestId":"a","templateName":"t","templateVersion":"v",
			"templateParameters":{"clusterName":"c","n":3,"f":1.5,"big":1e300,"list":[1,{"x":null}],"b":true}}`,
		mediaYAML: "provisioningRequestId: a\ntemplateName: t\ntemplateVersion: '1.0'\ntemplateParameters:\n  clusterName: c\n  count: 3\n  l: [1, 2.5, x, {y: null}]\n",
	} {
		d, err := query.ParseRequestData(media, []byte(body))
		require.NoError(t, err, media)
		require.NotPanics(t, func() { _ = runtime.DeepCopyJSONValue(d.Spec()) }, media)
	}
}

// countingReader counts what the server read of a body.
type countingReader struct {
	n    atomic.Int64
	left int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	for i := range p {
		p[i] = ' '
	}
	c.left -= int64(len(p))
	c.n.Add(int64(len(p)))
	return len(p), nil
}

func TestATooLargeBodyIsNotReadToTheEnd(t *testing.T) {
	srv, err := New(Config{}, newMemStore(), nil, nil, nil, nil)
	require.NoError(t, err)
	const size = 64 << 20

	// Declared too large: refused before reading anything.
	body := &countingReader{left: size}
	req := httptest.NewRequest(http.MethodPost, collectionPath, body)
	req.Header.Set("Content-Type", mediaJSON)
	req.ContentLength = size
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.Zero(t, body.n.Load())

	// Undeclared (chunked): read only one byte past the bound.
	body = &countingReader{left: size}
	req = httptest.NewRequest(http.MethodPost, collectionPath, body)
	req.Header.Set("Content-Type", mediaJSON)
	req.ContentLength = -1
	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.LessOrEqual(t, body.n.Load(), int64(query.MaxBodyBytes+64<<10))
}

func TestAChunkedBodyOverTheBoundIs413OnTheListener(t *testing.T) {
	s := startStub(t, newMemStore(), nil, nil)
	big := strings.Repeat(" ", query.MaxBodyBytes+1)
	req, err := http.NewRequest(http.MethodPost, s.base+collectionPath, io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Content-Type", mediaJSON)
	resp, err := s.client.Do(req)
	require.NoError(t, err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	x := &exchange{req: req, resp: resp, body: data}
	checkAgainstReference(t, x, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, x.code())
}

func TestNegotiate(t *testing.T) {
	for accept, want := range map[string]string{
		"":                 mediaJSON,
		"application/json": mediaJSON,
		"application/yaml": mediaYAML,
		"*/*":              mediaJSON,
		"application/*":    mediaJSON,
		"application/yaml;q=0.5, application/json;q=0.4": mediaYAML,
		"application/json;q=0.5, application/yaml":       mediaYAML,
		"application/yaml;q=0, */*":                      mediaJSON,
		"text/html, application/yaml;q=0.1":              mediaYAML,
		"text/html, nonsense/;;, application/json":       mediaJSON,
	} {
		got, ok := negotiate(accept)
		require.True(t, ok, accept)
		require.Equal(t, want, got, accept)
	}
	for _, accept := range []string{"text/html", "application/json;q=0", "application/xml, text/*", "*/*;q=0"} {
		_, ok := negotiate(accept)
		require.False(t, ok, accept)
	}
}
