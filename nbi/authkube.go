package nbi

import (
	"context"
	"slices"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
)

// DefaultTokenAudience is the audience a Kubernetes token must be minted for to open the NBI
// (NBI_TOKEN_AUDIENCES): `kubectl create token SA --audience o2ims-nbi`, or a projected token with it. A
// plain API token (audience: the API server's) is refused, so a token that opens the NBI does not also
// open the cluster's API, and the reverse.
const DefaultTokenAudience = "o2ims-nbi"

// kubeAuthenticator vouches for Kubernetes tokens with a TokenReview asking for its audiences.
type kubeAuthenticator struct {
	kube      kubernetes.Interface
	timeout   time.Duration
	audiences []string
}

func (k *kubeAuthenticator) name() string { return AuthKubernetes }

// authenticate recognises a token the API server authenticates for one of the audiences; one it refuses
// is left to the next authenticator (the chain refuses it last).
func (k *kubeAuthenticator) authenticate(ctx context.Context, token string) (identity, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	review, err := k.kube.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: k.audiences}}, metav1.CreateOptions{})
	if err != nil {
		return identity{}, true, reviewFailed("TokenReview", err)
	}
	if !review.Status.Authenticated || !intersects(review.Status.Audiences, k.audiences) {
		return identity{}, false, nil
	}
	u := review.Status.User
	extra := make(map[string][]string, len(u.Extra))
	for key, v := range u.Extra {
		extra[key] = v
	}
	return identity{
		Caller: caller.Caller{Authenticator: AuthKubernetes, User: u.Username, Groups: u.Groups},
		uid:    u.UID, extra: extra,
	}, true, nil
}

// intersects: the review answers the audiences the token is valid for among those asked (an empty
// answer means the API server's own, which were not asked for).
func intersects(got, want []string) bool {
	for _, g := range got {
		if slices.Contains(want, g) {
			return true
		}
	}
	return false
}
