// Package caller carries who made a northbound request, from the NBI's authentication down to the code
// that writes for it, so every write can name its caller (issue 35's audit): an annotation on the object
// written and a log line. It is a leaf package: the stores below the NBI's shell import it, not nbi.
package caller

import (
	"context"
	"encoding/json"
)

// Annotation names the caller of the NBI write that last wrote an object: user, client id and the
// authenticator that vouched for them. Never a token.
const Annotation = "o2ims.provisioning.oran.org/requested-by"

// Caller is an authenticated caller.
type Caller struct {
	// Authenticator is the one that recognised the token: "kubernetes" or "oauth".
	Authenticator string `json:"authenticator"`
	// User is the name SubjectAccessReviews are asked for (OAuth users carry the "oauth:" prefix).
	User string `json:"user"`
	// ClientID is the OAuth client (client_id or azp claim); empty for Kubernetes callers.
	ClientID string   `json:"clientId,omitempty"`
	Groups   []string `json:"-"`
}

type key struct{}

// With is ctx carrying c.
func With(ctx context.Context, c Caller) context.Context { return context.WithValue(ctx, key{}, c) }

// From is the caller ctx carries, if any (none when the NBI authenticates nobody).
func From(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(key{}).(Caller)
	return c, ok
}

// Value is the annotation's value for c: compact JSON of authenticator, user and client id.
func (c Caller) Value() string {
	b, _ := json.Marshal(c) // strings only: cannot fail
	return string(b)
}

// Annotate sets the annotation in annotations (made when nil) for the caller ctx carries, and answers
// them; without a caller they are answered unchanged.
func Annotate(ctx context.Context, annotations map[string]string) map[string]string {
	c, ok := From(ctx)
	if !ok {
		return annotations
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[Annotation] = c.Value()
	return annotations
}
