package nbi

import (
	"crypto/sha256"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

func TestTheReviewCacheIsBounded(t *testing.T) {
	a := newAuthenticator(nil, time.Second, zap.NewNop(), nil)
	now := time.Now()
	a.now = func() time.Time { return now }
	for i := 0; i < reviewCacheLimit*2; i++ {
		a.users.Add(sha256.Sum256([]byte(strconv.Itoa(i))), identity{uid: strconv.Itoa(i)}, reviewTTL)
		a.refusals.Add(sha256.Sum256([]byte(strconv.Itoa(i))), unauthorized(), refusalTTL)
		a.grants.Add(grantKey{access: access{verb: "get", path: strconv.Itoa(i)}}, struct{}{}, reviewTTL)
	}
	require.LessOrEqual(t, len(a.users.Keys()), reviewCacheLimit)
	require.LessOrEqual(t, len(a.grants.Keys()), reviewCacheLimit)
	require.LessOrEqual(t, len(a.refusals.Keys()), reviewCacheLimit)
	last := sha256.Sum256([]byte(strconv.Itoa(reviewCacheLimit*2 - 1)))
	_, ok := a.users.Get(last)
	require.True(t, ok, "the newest entry is kept")
	// Past the TTL nothing is served, however recently it was used.
	a.mu.Lock()
	a.now = func() time.Time { return now.Add(reviewTTL + time.Second) }
	a.mu.Unlock()
	_, ok = a.users.Get(last)
	require.False(t, ok)
}
