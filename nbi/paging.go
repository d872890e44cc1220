package nbi

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// A page ends after PageSize items; the next one starts after the last id answered. Items are sorted by
// provisioningRequestId, so "the ids after the marker" is stable while requests come and go between
// pages: nothing is answered twice, and nothing that existed throughout is skipped. The marker is the
// last id, base64url-encoded so callers treat it as opaque.

func encodeMarker(lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(lastID))
}

func decodeMarker(marker string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(marker)
	if err != nil || query.ValidateRequestID(string(b)) != nil {
		return "", fmt.Errorf("nextpage_opaque_marker %q is not a marker this API handed out", truncate(marker, 80))
	}
	return string(b), nil
}

// nextLink is the Link header value of the next page: the same path and query, with the new marker.
func nextLink(u *url.URL, order []queryParam, marker string) string {
	var q strings.Builder
	for _, p := range order {
		if p.key == "nextpage_opaque_marker" {
			continue
		}
		q.WriteString(url.QueryEscape(p.key))
		q.WriteByte('=')
		q.WriteString(url.QueryEscape(p.value))
		q.WriteByte('&')
	}
	q.WriteString("nextpage_opaque_marker=")
	q.WriteString(marker)
	return fmt.Sprintf("<%s?%s>; rel=\"next\"", u.EscapedPath(), q.String())
}

// truncate shortens a value quoted back in a ProblemDetails (internal/text: by runes, never inside one).
func truncate(s string, n int) string { return quote.Truncate(s, n) }
