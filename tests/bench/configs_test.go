package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/framework"
)

func TestConfigurationsGiveBothContendersTheSameLimits(t *testing.T) {
	// At the shipped defaults the operator runs without limit flags and the peer gets the operator's numbers.
	require.Nil(t, limitsShipped.oursArgs())
	require.Equal(t, []string{fmt.Sprintf("--kube-api-qps=%d", framework.DefaultQPS), fmt.Sprintf("--kube-api-burst=%d", framework.DefaultBurst)},
		limitsShipped.flags())
	require.Equal(t, []string{"--kube-api-qps=100", "--kube-api-burst=200"}, limitsQPS100.flags())
	require.Equal(t, limitsQPS100.flags(), limitsQPS100.oursArgs())
	// Four configurations, one of them the primary (measured in full).
	var primary []string
	for _, w := range sideWorlds {
		for _, l := range sideLimits {
			if c := (sideConfig{Limits: l, World: w}); c.primary() {
				primary = append(primary, c.String())
			}
		}
	}
	require.Len(t, sideWorlds, 2)
	require.Len(t, sideLimits, 2)
	require.Equal(t, []string{"QPS 100 / burst 200, world moving every 300ms"}, primary)
	require.Equal(t, "shipped defaults (1000 / 2000), world at zero delay", sideConfig{Limits: limitsShipped}.String())
}

func TestEventsAreCountedForTheRunsOwnRequestsOnly(t *testing.T) {
	require.True(t, ofRun("writes-q100-ours-0007", "writes-q100-ours"))
	require.True(t, ofRun("writes-q100-ours-12345", "writes-q100-ours"))
	require.False(t, ofRun("writes-q100-ours-x100-0007", "writes-q100-ours"), "a latency run's request")
	require.False(t, ofRun("writes-q100-ours-007", "writes-q100-ours"))
	require.False(t, ofRun("writes-q100-peer-0007", "writes-q100-ours"))
}

// contenderAt is a run of n requests at these rates, with CPU core-seconds per request for the contender
// and kube-apiserver, fulfil and delete.
func contenderAt(n int, rate, delRate, cpu, delCPU float64) contenderRun {
	per := func(x float64) cpuWindow {
		return cpuWindow{Wall: time.Second, ByPid: map[string]float64{"operator": x * float64(n), "kube-apiserver": 5 * x * float64(n)}}
	}
	return contenderRun{Fulfilled: n, Deleted: n, Rate: rate, DelRate: delRate, CPU: per(cpu), DelCPU: per(delCPU)}
}

// fourConfigs is a section 8 of n requests in the four configurations: ahead in the primary; behind
// on deletion; dearer on deletion; the peer not measured.
func fourConfigs(n int) *sideBySide {
	step := sideConfig{Limits: limitsQPS100, World: worldStep}
	ahead := configRun{Config: step, Ceiling: ceiling{Rate: 40},
		Ours: contenderAt(n, 36, 120, 0.005, 0.002), Peer: contenderAt(n, 30, 100, 0.006, 0.002)}
	behindOnDelete := configRun{Config: sideConfig{Limits: limitsShipped, World: worldStep}, Ceiling: ceiling{Rate: 40},
		Ours: contenderAt(n, 36, 110, 0.005, 0.002), Peer: contenderAt(n, 30, 100, 0.006, 0.002)}
	dearerOnDelete := configRun{Config: sideConfig{Limits: limitsQPS100}, Ceiling: ceiling{Rate: 100},
		Ours: contenderAt(n, 36, 120, 0.005, 0.003), Peer: contenderAt(n, 30, 100, 0.006, 0.002)}
	noPeer := configRun{Config: sideConfig{Limits: limitsShipped}, Ceiling: ceiling{Rate: 100},
		Ours: contenderAt(n, 90, 120, 0.005, 0.002), PeerErr: "it did not build"}
	return &sideBySide{N: n, configRun: ahead, More: []configRun{behindOnDelete, dearerOnDelete, noPeer}}
}

func TestEveryConfigurationHasItsVerdicts(t *testing.T) {
	const n = 10
	r := &report{SideBySide: fourConfigs(n)}
	var b strings.Builder
	r.configsSummary(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, rows, 12, b.String())
	verdicts := make([]string, len(rows))
	for i, row := range rows {
		cells := strings.Split(row, "|")
		verdicts[i] = strings.TrimSpace(cells[len(cells)-2])
	}
	met, missed := "**met**", "**missed**"
	require.Equal(t, []string{
		met, missed, met, missed, // ≥ 1.2× the peer: 1.2× and 1.2×; deleted 1.1×; 1.2×; no peer
		met, met, missed, missed, // CPU ≤ the peer's: fulfil and delete; the same; delete dearer; no peer
		met, met, missed, met, // ≥ 80 % of the ceiling: 90 %, 90 %, 36 %, 90 %
	}, verdicts, b.String())
	require.Contains(t, rows[3], "not measured (it did not build)")
	require.Contains(t, rows[0], "QPS 100 / burst 200, world moving every 300ms")
}

func TestTheCompactTableHasAColumnPerConfiguration(t *testing.T) {
	r := &report{SideBySide: fourConfigs(10)}
	var b strings.Builder
	r.configsTable(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	var rows []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "|") {
			rows = append(rows, l)
		}
	}
	require.Greater(t, len(rows), 8, b.String())
	for _, row := range rows {
		require.Len(t, strings.Split(row, "|"), 7, row) // a label and 4 configurations
	}
	require.Contains(t, rows[0], "shipped defaults (1000 / 2000), world at zero delay")
	require.Contains(t, b.String(), "| **fulfilled/s**, the mean (each round) (ours ÷ the peer's) | **36.0**; 30.0 (1.20×) |")
	require.Contains(t, b.String(), "| **90.0**; not measured (it did not build) |")
	require.NotContains(t, b.String(), "| note |", "no run has a note")
}
