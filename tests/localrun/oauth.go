package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/tests/hydra"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// The --oauth run: the SMO is a client-credentials client of a real ORY Hydra, in the O2IMS role
// o2ims-admin through its scope (docs/api.md "OAuth 2.0 and mutual TLS"), with tokens for the NBI's audience.
const (
	oauthAudience = "o2ims-nbi"
	oauthClientID = "smo-local"
	oauthScope    = "role:o2ims-admin"
)

// bearer is the access token every NBI call of this program carries ("" without --oauth).
var bearer string

// oauthRun is the running Hydra and the SMO's client in it.
type oauthRun struct {
	hydra  *hydra.Hydra
	client hydra.Client
}

// startOAuth applies the nbi-auth component's objects (the operator may create SubjectAccessReviews; the
// O2IMS roles bound to their groups), starts Hydra with its log in dir, registers the SMO's client through
// Hydra's admin API and fetches its first token. It answers the operator's environment for NBI_AUTH=oauth.
func startOAuth(ctx context.Context, st *stack.Stack, dir string) (*oauthRun, map[string]string, error) {
	say("applying the nbi-auth component's objects (O2IMS roles, TokenReview/SubjectAccessReview rights): kubectl apply -k manifests/nbi-auth/objects")
	if err := st.ApplyManifests(ctx, "manifests/nbi-auth/objects"); err != nil {
		return nil, nil, err
	}
	if err := waitGranted(ctx, st); err != nil {
		return nil, nil, err
	}
	say("starting ORY Hydra v2.3.0 (the SMO's OAuth 2.0 server) on loopback")
	h, err := hydra.StartProcess(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	o := &oauthRun{hydra: h}
	if o.client, err = h.CreateClientE(ctx, oauthClientID, []string{oauthScope}, []string{oauthAudience}); err != nil {
		h.Stop()
		return nil, nil, err
	}
	if bearer, err = h.TryToken(ctx, o.client, []string{oauthScope}, []string{oauthAudience}); err != nil {
		h.Stop()
		return nil, nil, err
	}
	say("Hydra %s: client %s (scope %s, audience %s) has a token; every NBI call below carries it:\n    %s",
		h.Public, oauthClientID, oauthScope, oauthAudience, o.tokenCurl())
	env := map[string]string{"NBI_AUTH": "oauth", "OAUTH_ISSUER_URL": h.Issuer(), "OAUTH_AUDIENCE": oauthAudience}
	return o, env, nil
}

// tokenCurl is the SMO's token request, as curl.
func (o *oauthRun) tokenCurl() string {
	return fmt.Sprintf("export TOKEN=$(curl -s -u %s:%s %s/oauth2/token -d grant_type=client_credentials -d scope=%s -d audience=%s | jq -r .access_token)",
		o.client.ID, o.client.Secret, o.hydra.Public, oauthScope, oauthAudience)
}

// curlAuth is the header an NBI curl needs ("" without --oauth).
func curlAuth() string {
	if bearer == "" {
		return ""
	}
	return ` -H "Authorization: Bearer $TOKEN"`
}

// withAuth adds the bearer header to every curl of an NBI line of text (those naming nbiURL).
func withAuth(text, nbiURL string) string {
	if bearer == "" {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.Contains(l, nbiURL) {
			lines[i] = strings.ReplaceAll(l, "curl -s", "curl -s"+curlAuth())
		}
	}
	return strings.Join(lines, "\n")
}

// waitGranted waits until the API server's authorizer has the new bindings (it sees them a moment after
// they are created): the operator may create SubjectAccessReviews, and group o2ims-admin may create
// provisioning requests and inventory subscriptions.
func waitGranted(ctx context.Context, st *stack.Stack) error {
	cs := st.API.AdminClientset()
	specs := []authzv1.SubjectAccessReviewSpec{
		{User: "system:serviceaccount:" + stack.OperatorNamespace + ":" + stack.ServiceAccount,
			ResourceAttributes: &authzv1.ResourceAttributes{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}},
		{User: "run-local-probe", Groups: []string{"o2ims-admin"},
			NonResourceAttributes: &authzv1.NonResourceAttributes{Path: "/o2ims-infrastructureProvisioning/v1/provisioningRequests", Verb: "post"}},
		{User: "run-local-probe", Groups: []string{"o2ims-admin"},
			NonResourceAttributes: &authzv1.NonResourceAttributes{Path: "/o2ims-infrastructureInventory/v1/subscriptions", Verb: "post"}},
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, spec := range specs {
		for {
			sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			if err == nil && sar.Status.Allowed {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the API server never granted the nbi-auth roles (%v; last: %v)", spec, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
