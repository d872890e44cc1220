package provisioning

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

var linkNext = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// walk follows the Link headers from first, calling between(page) after each page, and returns the
// ids answered in order.
func walk(t *testing.T, do func(path string) *nbitest.Exchange, first string, between func(page int)) []string {
	t.Helper()
	var seen []string
	path := first
	for page := 0; ; page++ {
		require.Less(t, page, 1000, "paging does not end")
		x := do(path)
		require.Equal(t, http.StatusOK, x.Code(), "%s", x.Body)
		seen = append(seen, ids(list(t, x))...)
		link := x.Resp.Header.Get("Link")
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
	store := nbitest.NewMemStore()
	for _, n := range namesN("pr-", 7) {
		store.Put(nbitest.PRObject(n, nbitest.SimpleSpec("c"), nil))
	}
	s := startStub(t, store, nil, nil, func(c *nbi.Config) { c.PageSize = 3 })
	do := func(p string) *nbitest.Exchange { return s.Do(t, http.MethodGet, p, nil) }

	x := do(nbitest.CollectionPath)
	require.Len(t, list(t, x).Items, 3)
	require.Equal(t, fmt.Sprintf(`<%s?nextpage_opaque_marker=%s>; rel="next"`, nbitest.CollectionPath, encodeMarker("pr-002")), x.Resp.Header.Get("Link"))
	require.Equal(t, namesN("pr-", 7), walk(t, do, nbitest.CollectionPath, nil))

	// The other parameters travel with the marker; a literal ';' in the filter survives.
	filtered := nbitest.CollectionPath + "?filter=(neq,provisioningRequestData/provisioningRequestId,pr-001);(neq,provisioningRequestData/provisioningRequestId,pr-005)&fields=status"
	require.Equal(t, []string{"pr-000", "pr-002", "pr-003", "pr-004", "pr-006"}, walk(t, do, filtered, nil))
	x = do(filtered)
	next, err := url.Parse(linkNext.FindStringSubmatch(x.Resp.Header.Get("Link"))[1])
	require.NoError(t, err)
	q := next.Query()
	require.Equal(t, "(neq,provisioningRequestData/provisioningRequestId,pr-001);(neq,provisioningRequestData/provisioningRequestId,pr-005)", q.Get("filter"))
	require.Equal(t, "status", q.Get("fields"))

	// Exactly a page: no Link on it.
	s2 := startStub(t, nbitest.NewMemStore(nbitest.PRObject("a", nbitest.SimpleSpec("c"), nil), nbitest.PRObject("b", nbitest.SimpleSpec("c"), nil)), nil, nil, func(c *nbi.Config) { c.PageSize = 2 })
	require.Empty(t, s2.Do(t, http.MethodGet, nbitest.CollectionPath, nil).Resp.Header.Get("Link"))
}

func TestPagingIsStableWhileRequestsComeAndGo(t *testing.T) {
	store := nbitest.NewMemStore()
	initial := namesN("pr-", 10)
	for _, n := range initial {
		store.Put(nbitest.PRObject(n, nbitest.SimpleSpec("c"), nil))
	}
	s := startStub(t, store, nil, nil, func(c *nbi.Config) { c.PageSize = 3 })
	do := func(p string) *nbitest.Exchange { return s.Do(t, http.MethodGet, p, nil) }

	deleted := map[string]bool{}
	seen := walk(t, do, nbitest.CollectionPath, func(page int) {
		switch page {
		case 0: // after pr-000..002: delete one answered and one to come, add one behind and one ahead
			for _, n := range []string{"pr-001", "pr-007"} {
				store.Remove(n)
				deleted[n] = true
			}
			store.Put(nbitest.PRObject("pr-000a", nbitest.SimpleSpec("c"), nil)) // behind the marker: not answered in this walk
			store.Put(nbitest.PRObject("pr-008a", nbitest.SimpleSpec("c"), nil)) // ahead: answered
		case 1:
			store.Remove("pr-009")
			deleted["pr-009"] = true
			store.Put(nbitest.PRObject("pr-zzz", nbitest.SimpleSpec("c"), nil))
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
	s := startStub(t, nbitest.NewMemStore(nbitest.PRObject("a", nbitest.SimpleSpec("c"), nil)), nil, nil)
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
		x := s.Do(t, http.MethodGet, nbitest.CollectionPath+q, nil)
		require.Equal(t, http.StatusBadRequest, x.Code(), q)
		require.Contains(t, x.Problem(t).Status, want, q)
	}
	// The reference's spelling and SOL013's are one parameter.
	for _, q := range []string{"?exclude-fields=provisioningRequestData/templateParameters/x", "?exclude_fields=provisioningRequestData/templateParameters/x", "?all_fields=true", "?exclude_default=true"} {
		require.Equal(t, http.StatusOK, s.Do(t, http.MethodGet, nbitest.CollectionPath+q, nil).Code(), q)
	}
}

func TestPagingOnTheRealAPIServerUnderConcurrentCreatesAndDeletes(t *testing.T) {
	e := newEnv(t, func(c *nbi.Config) { c.PageSize = 2 })
	initial := []string{e.ID("a"), e.ID("b"), e.ID("c"), e.ID("d"), e.ID("e"), e.ID("f")}
	for _, id := range initial {
		e.CreateDirect(id, nbitest.SimpleSpec("c"))
	}
	e.Eventually(nbitest.CollectionPath, func(x *nbitest.Exchange) bool {
		return len(walk(t, func(p string) *nbitest.Exchange { return e.Do(http.MethodGet, p, nil) }, nbitest.CollectionPath, nil)) == len(initial)
	}, "all cached")

	do := func(p string) *nbitest.Exchange { return e.Do(http.MethodGet, p, nil) }
	seen := walk(t, do, nbitest.CollectionPath, func(page int) {
		if page != 0 {
			return
		}
		// Between pages: one answered goes, one ahead goes, one is added behind and one ahead, and the
		// next page waits until the cache has seen all four.
		require.Equal(t, http.StatusAccepted, e.Do(http.MethodDelete, nbitest.NamedPath(e.ID("a")), nil).Code())
		require.Equal(t, http.StatusAccepted, e.Do(http.MethodDelete, nbitest.NamedPath(e.ID("e")), nil).Code())
		require.Equal(t, http.StatusCreated, e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(e.ID("a0")))).Code())
		require.Equal(t, http.StatusCreated, e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(e.ID("d0")))).Code())
		e.Eventually(nbitest.NamedPath(e.ID("e")), nbitest.Status(http.StatusNotFound), "e gone from the cache")
		e.WaitCached(e.ID("d0"))
		e.WaitCached(e.ID("a0"))
		e.Eventually(nbitest.NamedPath(e.ID("a")), nbitest.Status(http.StatusNotFound), "a gone from the cache")
	})
	require.Equal(t, []string{e.ID("a"), e.ID("b"), e.ID("c"), e.ID("d"), e.ID("d0"), e.ID("f")}, seen)
	require.True(t, strings.HasPrefix(seen[0], e.Prefix))
}
