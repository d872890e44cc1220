package framework

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/o2ims-operator/o2ims-operator/internal/bearer"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// A token file that is briefly unreadable (kubelet mid-swap, a remount) must not fail calls as a
// configuration problem: the last good token is used meanwhile, and with none at hand the failure is a
// retryable one, never ClassConfig (which fails a request for good).
func TestUnreadableTokenFileUsesTheLastGoodTokenAndIsNeverAConfigFailure(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(srv.AdminToken+"\n"), 0o600))
	cfg := &rest.Config{Host: srv.URL, BearerTokenFile: tokenFile, TLSClientConfig: rest.TLSClientConfig{CAFile: srv.CAFile}}
	clients, err := NewClients(cfg, DefaultClientOptions())
	require.NoError(t, err)
	ctx := context.Background()
	_, err = clients.Kubernetes.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err)

	// Gone, then empty: the last good token carries on.
	require.NoError(t, os.Remove(tokenFile))
	_, err = clients.Kubernetes.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	assert.NoError(t, err, "a missing token file failed the call although a good token was at hand")
	require.NoError(t, os.WriteFile(tokenFile, nil, 0o600))
	_, err = clients.Kubernetes.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	assert.NoError(t, err, "an empty token file failed the call although a good token was at hand")

	// No good token ever read (the file vanished right after start): retryable, not a config failure.
	src := bearer.NewFile(filepath.Join(t.TempDir(), "missing"), 4096)
	rt := &tokenTransport{src: src, next: nil}
	restCfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: srv.CAFile},
		WrapTransport: func(next http.RoundTripper) http.RoundTripper { rt.next = next; return rt }}
	bare, err := NewClients(restCfg, DefaultClientOptions())
	require.NoError(t, err)
	_, err = bare.Kubernetes.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	require.Error(t, err)
	ae, ok := AsAPIError(ClassifyAPIError("get namespace", false, err))
	require.True(t, ok)
	assert.NotEqual(t, ClassConfig, ae.Class)
	assert.True(t, ae.Retryable, "an unreadable token file must be retried: %v", err)
	assert.False(t, ae.MayHaveLanded)

	// Start still refuses a token file it cannot read at all: that is a configuration error.
	_, err = NewClients(&rest.Config{Host: srv.URL, BearerTokenFile: filepath.Join(t.TempDir(), "none")}, DefaultClientOptions())
	assert.Error(t, err)
}
