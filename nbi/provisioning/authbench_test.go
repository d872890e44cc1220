package provisioning

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/hydra"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// BenchmarkNBIAuth is BenchmarkGetNamed's GET through the whole handler without authentication ("none")
// and with NBI_AUTH=oauth: a client-credentials token from a real ORY Hydra v2.3.0 (scope
// role:o2ims-reader), the issuer's keys fetched at start and cached, the caller authorised by a
// SubjectAccessReview on the real kube-apiserver against the shipped O2IMS roles. "oauth" is a polling
// SMO: the same request again, its token and grant answered from the caches and checked again every
// nbi.ReviewTTL (in the timings); issue 35 bounds its p99 at 1.2× none's. "oauth-each-path" GETs the
// 10 000 requests in turn: a grant is per path, so each GET costs a SubjectAccessReview.
func BenchmarkNBIAuth(b *testing.B) {
	store, names := benchStore()
	h := hydra.Start(b)
	const scope, audience = "role:o2ims-reader", "o2ims-nbi"
	token := h.Token(b, h.CreateClient(b, "bench-reader", []string{scope}, []string{audience}), []string{scope}, []string{audience})
	kapi := kubeapi.Shared(b)
	nbitest.ApplyO2IMSRoles(b, kapi)
	oauth := nbi.Config{Auth: nbi.AuthOAuth, OAuth: nbi.OAuthConfig{IssuerURL: h.Issuer(), Audience: audience}}
	for _, c := range []struct {
		name, token string
		cfg         nbi.Config
		paths       []string
	}{
		{"none", "", nbi.Config{}, names},
		{"oauth", token, oauth, names[:1]},
		{"oauth-each-path", token, oauth, names},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.cfg.Host, c.cfg.Port = "127.0.0.1", 0
			srv, err := newServer(c.cfg, store, nil, kapi.AdminClientset(), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := srv.Start(); err != nil { // fetches the issuer's keys, as the operator does at start
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
			handler := srv.Handler()
			get := func(name string) time.Duration {
				req := httptest.NewRequest(http.MethodGet, nbitest.NamedPath(name), nil)
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				rec := httptest.NewRecorder()
				start := time.Now()
				handler.ServeHTTP(rec, req)
				took := time.Since(start)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
				}
				return took
			}
			get(c.paths[0]) // the first token's verification and review are not the steady state
			var lat []time.Duration
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				lat = append(lat, get(c.paths[i%len(c.paths)]))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e6, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e6, "p50-ms")
		})
	}
}
