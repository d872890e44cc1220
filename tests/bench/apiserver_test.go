package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTopWritesAreTheLargestPerRequest(t *testing.T) {
	by := map[string]float64{"events POST": 3000, "clusters/status PATCH": 4000, "packagevariants POST": 1000, "leases PUT": 10}
	require.Equal(t, "clusters/status PATCH 4.00, events POST 3.00, packagevariants POST 1.00", topWrites(by, 1000, 0.05))
	require.Equal(t, "–", topWrites(nil, 1000, 0.05))
	after := apiRequests{Writes: 5, ByResource: map[string]float64{"events POST": 7, "leases PUT": 2}}
	before := apiRequests{Writes: 2, ByResource: map[string]float64{"events POST": 4, "leases PUT": 2}}
	require.Equal(t, map[string]float64{"events POST": 3}, after.minus(before).ByResource)
}
