package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/handlers"
)

func TestTheControlIsReportedBesideBothContenders(t *testing.T) {
	const n = 10
	sb := fourConfigs(n)
	r := &report{SideBySide: sb}
	render := func(f func(printer)) string {
		var b strings.Builder
		f(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
		return b.String()
	}
	require.Empty(t, render(r.controlSummary), "no control measured: no row")
	require.Empty(t, render(r.controlTable))

	sb.ControlErr = "it did not start"
	require.Contains(t, render(r.controlTable), "was not measured: it did not start")

	ctl := contenderAt(n, 25, 100, 0.006, 0.002)
	ctl.Object = objectSize{Bytes: 3222, ManagedFields: 1358}
	ctl.addRound(contenderAt(n, 27, 140, 0.006, 0.002))
	sb.Control, sb.ControlErr = &ctl, ""
	sb.Ours.Object = objectSize{Bytes: 3218, ManagedFields: 1354}
	row := render(r.controlSummary)
	// Ours deletes 120/s; the control's two rounds, 100 and 140, make 120: 1.00×; the peer 100/s.
	require.Contains(t, row, "ours 120.0/s, the control 120.0/s (1.00×); the peer without them 100.0/s")
	table := render(r.controlTable)
	require.Contains(t, table, "| a request before the deletion, as the API server returns it | 3218 B (managedFields 1354 B) | not measured | 3222 B (managedFields 1358 B) |")
	require.Contains(t, table, "**120.0** (100.0, 140.0)")
}

func TestControlFlagIsThePeersOwn(t *testing.T) {
	// The peer's flag set (tests/bench/peer/main.go) defines the flag the bench passes.
	src, err := os.ReadFile(filepath.Join("peer", "main.go"))
	require.NoError(t, err)
	require.Contains(t, string(src), `"`+strings.TrimPrefix(controlFlag, "--")+`"`)
}

func TestTheControlWritesTheOperatorsKopfKeys(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("peer", "kopf.go"))
	require.NoError(t, err)
	keys := (kopf.Namer{Prefix: handlers.Prefix}).Keys(kopf.DiffBaseName)
	require.Len(t, keys, 2, "the diff-base under kopf's two keys")
	for _, k := range append(keys, handlers.Prefix+"/kopf-managed") {
		require.Contains(t, string(src), `"`+k+`"`)
	}
}
