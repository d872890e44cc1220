package performance

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// The one table covers exactly the measurements the performance dictionaries list, each over the
// metric its definition names.
func TestEveryDictionaryMeasurementHasAQuery(t *testing.T) {
	require.Len(t, Queries, len(inventory.Measurements))
	for _, m := range inventory.Measurements {
		q, err := Query(m.ID, []string{"host-1"}, time.Minute)
		require.NoError(t, err, m.ID)
		require.Contains(t, q, m.Metric+"{", m.ID)
		require.Contains(t, q, `instance=~"(host-1)(:[0-9]+)?"`, m.ID)
		require.NotContains(t, q, "$", m.ID)
		if m.Method == "counter" {
			require.Contains(t, q, "rate(", m.ID)
			require.Contains(t, q, "[60s]", m.ID)
		}
	}
	_, err := Query("disk.iops", nil, time.Minute)
	require.Error(t, err)
}

// A device name is matched literally: regex metacharacters quoted, then escaped for the PromQL string.
func TestInstanceSelectorQuotesNames(t *testing.T) {
	q, err := Query("memory.total", []string{"rack1.host-1", `we"ird`}, time.Minute)
	require.NoError(t, err)
	require.True(t, strings.Contains(q, `instance=~"(rack1\\.host-1|we\"ird)(:[0-9]+)?"`), q)
	require.Equal(t, 2*time.Minute, RateWindow(2*time.Minute))
	require.Equal(t, time.Minute, RateWindow(time.Second))
	for in, want := range map[string]string{"host-1:9100": "host-1", "host-1": "host-1", "[::1]:9100": "::1", "::1": "::1"} {
		require.Equal(t, want, HostOf(in), in)
	}
}

func TestBoundsFromEnv(t *testing.T) {
	b, err := BoundsFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, DefaultBounds, b)
	env := map[string]string{EnvMaxJobs: "5", EnvMinInterval: "10", EnvMaxResults: "100"}
	b, err = BoundsFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, Bounds{MaxJobs: 5, MinInterval: 10, MaxResults: 100, MaxSubscriptions: 20}, b)
	for _, bad := range []string{"0", "-1", "x", "100000"} {
		_, err := BoundsFromEnv(func(k string) string {
			if k == EnvMaxResults {
				return bad
			}
			return ""
		})
		require.Error(t, err, bad)
	}
	for url, ok := range map[string]bool{"http://prometheus:9090": true, "https://p/sub": true, "ftp://p": false, "http://u:p@p": false, "p:9090": false} {
		_, err := PrometheusConfigFromEnv(func(k string) string {
			if k == EnvPrometheusURL {
				return url
			}
			return ""
		})
		require.Equal(t, ok, err == nil, url)
	}
	_, err = PrometheusConfigFromEnv(func(k string) string {
		return map[string]string{EnvPrometheusURL: "http://prometheus:9090", EnvPrometheusTokenFile: "/t"}[k]
	})
	require.ErrorContains(t, err, "only over https", "a token never travels in the clear")
}
