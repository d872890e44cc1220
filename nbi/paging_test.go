package nbi

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var linkNext = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// walk follows the Link headers from first, calling between(page) after each page, and returns the
// ids answered in order.
func walk(t *testing.T, do func(path string) *exchange, first string, between func(page int)) []string {
	t.Helper()
	var seen []string
	path := first
	for page := 0; ; page++ {
		require.Less(t, page, 1000, "paging does not end")
		x := do(path)
		require.Equal(t, http.StatusOK, x.code(), "%s", x.body)
		seen = append(seen, ids(x.list(t))...)
		link := x.resp.Header.Get("Link")
		if link == "" {
			return seen
		}
		m := linkNext.FindStringSubmatch(link)
		require.NotNil(t, m, "Link %q", link)
		path = m[1]
		if between != nil {
			between(page)
		}
	}
}

func namesN(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

func TestPagingAnswersEveryRequestOnceInIDOrder(t *testing.T) {
	store := newMemStore()
	for _, n := range namesN("pr-", 7) {
		store.put(prObject(n, simpleSpec("c"), nil))
	}
	s := startStub(t, store, nil, nil, func(c *Config) { c.PageSize = 3 })
	do := func(p string) *exchange { return s.do(t, http.MethodGet, p, nil) }

	x := do(collectionPath)
	require.Len(t, x.list(t).Items, 3)
	require.Equal(t, fmt.Sprintf(`<%s?nextpage_opaque_marker=%s>; rel="next"`, collectionPath, encodeMarker("pr-002")), x.resp.Header.Get("Link"))
	require.Equal(t, namesN("pr-", 7), walk(t, do, collectionPath, nil))

	// The other parameters travel with the marker; a literal ';' in the filter survives.
	filtered := collectionPath + "?filter=(neq,provisioningRequestData/provisioningRequestId,pr-001);(neq,provisioningRequestData/provisioningRequestId,pr-005)&fields=status"
	require.Equal(t, []string{"pr-000", "pr-002", "pr-003", "pr-004", "pr-006"}, walk(t, do, filtered, nil))
	x = do(filtered)
	next, err := url.Parse(linkNext.FindStringSubmatch(x.resp.Header.Get("Link"))[1])
	require.NoError(t, err)
	q := next.Query()
	require.Equal(t, "(neq,provisioningRequestData/provisioningRequestId,pr-001);(neq,provisioningRequestData/provisioningRequestId,pr-005)", q.Get("filter"))
	require.Equal(t, "status", q.Get("fields"))

	// Exactly a page: no Link on it.
	s2 := startStub(t, newMemStore(prObject("a", simpleSpec("c"), nil), prObject("b", simpleSpec("c"), nil)), nil, nil, func(c *Config) { c.PageSize = 2 })
	require.Empty(t, s2.do(t, http.MethodGet, collectionPath, nil).resp.Header.Get("Link"))
}

func TestPagingIsStableWhileRequestsComeAndGo(t *testing.T) {
	store := newMemStore()
	initial := namesN("pr-", 10)
	for _, n := range initial {
		store.put(prObject(n, simpleSpec("c"), nil))
	}
	s := startStub(t, store, nil, nil, func(c *Config) { c.PageSize = 3 })
	do := func(p string) *exchange { return s.do(t, http.MethodGet, p, nil) }

	deleted := map[string]bool{}
	seen := walk(t, do, collectionPath, func(page int) {
		switch page {
		case 0: // after pr-000..002: delete one answered and one to come, add one behind and one ahead
			for _, n := range []string{"pr-001", "pr-007"} {
				store.remove(n)
				deleted[n] = true
			}
			store.put(prObject("pr-000a", simpleSpec("c"), nil)) // behind the marker: not answered in this walk
			store.put(prObject("pr-008a", simpleSpec("c"), nil)) // ahead: answered
		case 1:
			store.remove("pr-009")
			deleted["pr-009"] = true
			store.put(prObject("pr-zzz", simpleSpec("c"), nil))
		}
	})
	counts := map[string]int{}
	for _, id := range seen {
		counts[id]++
		require.Equal(t, 1, counts[id], "%s answered twice: %v", id, seen)
	}
	for _, n := range initial {
		if !deleted[n] || n == "pr-001" { // existed throughout, or answered before it went
			require.Contains(t, counts, n, "%s was skipped: %v", n, seen)
		}
	}
	require.NotContains(t, counts, "pr-007")
	require.NotContains(t, counts, "pr-000a")
	require.Contains(t, counts, "pr-008a")
	require.Contains(t, counts, "pr-zzz")
	require.IsIncreasing(t, seen)
}

func TestListQueryErrorsAre400(t *testing.T) {
	s := startStub(t, newMemStore(prObject("a", simpleSpec("c"), nil)), nil, nil)
	for q, want := range map[string]string{
		"?filters=(eq,status/message,x)":                   `unknown query parameter(s) "filters"`,
		"?filter=(eq,status/message,x)&filter=(eq,a,b)":    "more than once",
		"?exclude_fields=x&exclude-fields=y":               "more than once",
		"?filter=(eq,status/message,x":                     "invalid attribute-based filtering expression",
		"?filter=":                                         "filter is empty",
		"?filter=%zz":                                      "malformed",
		"?fields=status/nope":                              "invalid attribute selector",
		"?all_fields&fields=status":                        "cannot be combined",
		"?nextpage_opaque_marker=%21%21":                   "not a marker this API handed out",
		"?nextpage_opaque_marker=" + encodeMarker("UPPER"): "not a marker",
		"?exclude-fields=status":                           "cannot be excluded",
	} {
		x := s.do(t, http.MethodGet, collectionPath+q, nil)
		require.Equal(t, http.StatusBadRequest, x.code(), q)
		require.Contains(t, x.problem(t).Status, want, q)
	}
	// The reference's spelling and SOL013's are one parameter.
	for _, q := range []string{"?exclude-fields=provisioningRequestData/templateParameters/x", "?exclude_fields=provisioningRequestData/templateParameters/x", "?all_fields=true", "?exclude_default=true"} {
		require.Equal(t, http.StatusOK, s.do(t, http.MethodGet, collectionPath+q, nil).code(), q)
	}
}

func TestPagingOnTheRealAPIServerUnderConcurrentCreatesAndDeletes(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PageSize = 2 })
	initial := []string{e.id("a"), e.id("b"), e.id("c"), e.id("d"), e.id("e"), e.id("f")}
	for _, id := range initial {
		e.createDirect(id, simpleSpec("c"))
	}
	e.eventually(collectionPath, func(x *exchange) bool {
		return len(walk(t, func(p string) *exchange { return e.do(http.MethodGet, p, nil) }, collectionPath, nil)) == len(initial)
	}, "all cached")

	do := func(p string) *exchange { return e.do(http.MethodGet, p, nil) }
	seen := walk(t, do, collectionPath, func(page int) {
		if page != 0 {
			return
		}
		// Between pages: one answered goes, one ahead goes, one is added behind and one ahead, and the
		// next page waits until the cache has seen all four.
		require.Equal(t, http.StatusAccepted, e.do(http.MethodDelete, namedPath(e.id("a")), nil).code())
		require.Equal(t, http.StatusAccepted, e.do(http.MethodDelete, namedPath(e.id("e")), nil).code())
		require.Equal(t, http.StatusCreated, e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(e.id("a0")))).code())
		require.Equal(t, http.StatusCreated, e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(e.id("d0")))).code())
		e.eventually(namedPath(e.id("e")), status(http.StatusNotFound), "e gone from the cache")
		e.waitCached(e.id("d0"))
		e.waitCached(e.id("a0"))
		e.eventually(namedPath(e.id("a")), status(http.StatusNotFound), "a gone from the cache")
	})
	require.Equal(t, []string{e.id("a"), e.id("b"), e.id("c"), e.id("d"), e.id("d0"), e.id("f")}, seen)
	require.True(t, strings.HasPrefix(seen[0], e.prefix))
}
