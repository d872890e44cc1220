package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Go prints a benchmark's own metrics between ns/op and B/op; both kinds must be read.
func TestParseGoBenchReadsCustomMetricsAndMemory(t *testing.T) {
	out := "goos: linux\npkg: github.com/o2ims-operator/o2ims-operator/nbi\n" +
		"BenchmarkInventoryGetResource-2   \t   84534\t     14090 ns/op\t         0.01200 p50-ms\t         0.07400 p99-ms\t    6021 B/op\t      66 allocs/op\n" +
		"BenchmarkGetNamed-2   \t   90000\t     12000 ns/op\t    5000 B/op\t      55 allocs/op\nPASS\n"
	res := parseGoBench(strings.NewReader(out))
	require.Len(t, res, 2)
	assert.Equal(t, goBench{Pkg: "nbi", Name: "BenchmarkInventoryGetResource", N: 84534, NsOp: 14090, BytesOp: 6021, Allocs: 66,
		Extra: map[string]float64{"p50-ms": 0.012, "p99-ms": 0.074}}, res[0])
	assert.Equal(t, goBench{Pkg: "nbi", Name: "BenchmarkGetNamed", N: 90000, NsOp: 12000, BytesOp: 5000, Allocs: 55,
		Extra: map[string]float64{}}, res[1])
}
