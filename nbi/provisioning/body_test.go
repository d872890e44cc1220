package provisioning

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// What a body that is accepted becomes, an unstructured object can hold (DeepCopyJSONValue panics on
// anything else); the fuzz target of package query checks the same without apimachinery.
func TestAnAcceptedSpecIsAnUnstructuredValue(t *testing.T) {
	for media, body := range map[string]string{
		query.MediaJSON: `{"provisioningRequestId":"a","templateName":"t","templateVersion":"v",
			"templateParameters":{"clusterName":"c","n":3,"f":1.5,"big":1e300,"list":[1,{"x":null}],"b":true}}`,
		query.MediaYAML: "provisioningRequestId: a\ntemplateName: t\ntemplateVersion: '1.0'\ntemplateParameters:\n  clusterName: c\n  count: 3\n  l: [1, 2.5, x, {y: null}]\n",
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
	srv, err := newServer(nbi.Config{}, nbitest.NewMemStore(), nil, nil, nil, nil)
	require.NoError(t, err)
	const size = 64 << 20

	// Declared too large: refused before reading anything.
	body := &countingReader{left: size}
	req := httptest.NewRequest(http.MethodPost, nbitest.CollectionPath, body)
	req.Header.Set("Content-Type", query.MediaJSON)
	req.ContentLength = size
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.Zero(t, body.n.Load())

	// Undeclared (chunked): read only one byte past the bound.
	body = &countingReader{left: size}
	req = httptest.NewRequest(http.MethodPost, nbitest.CollectionPath, body)
	req.Header.Set("Content-Type", query.MediaJSON)
	req.ContentLength = -1
	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.LessOrEqual(t, body.n.Load(), int64(query.MaxBodyBytes+64<<10))
}

func TestAChunkedBodyOverTheBoundIs413OnTheListener(t *testing.T) {
	s := startStub(t, nbitest.NewMemStore(), nil, nil)
	big := strings.Repeat(" ", query.MaxBodyBytes+1)
	req, err := http.NewRequest(http.MethodPost, s.Base+nbitest.CollectionPath, io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Content-Type", query.MediaJSON)
	resp, err := s.Client.Do(req)
	require.NoError(t, err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	x := &nbitest.Exchange{Req: req, Resp: resp, Body: data}
	nbitest.CheckAgainstReference(t, x, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, x.Code())
}
