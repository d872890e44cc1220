package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// goBench is one line of `go test -bench -benchmem`.
type goBench struct {
	Pkg, Name             string
	N                     int
	NsOp, BytesOp, Allocs float64
	// Extra holds what a benchmark reported with b.ReportMetric (e.g. "p99-ms"), by unit.
	Extra map[string]float64
}

// A result line is the name, the iterations, then "value unit" pairs: ns/op, the benchmark's own metrics
// (sorted by unit), B/op and allocs/op.
var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)
	benchPair = regexp.MustCompile(`([-+\d.eE]+) (\S+)`)
)

// runGoBenchmarks runs the framework dispatch and NBI handler benchmarks (their TestMain starts an API
// server, which the benchmarks themselves do not use) and the notifier's token requests (subscriptions).
func runGoBenchmarks(ctx context.Context, root string) ([]goBench, string, error) {
	args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", "1", "./framework/", "./nbi/provisioning/", "./nbi/inventoryapi/", "./subscriptions/"}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	command := "go " + strings.Join(args, " ")
	if err != nil {
		return nil, command, fmt.Errorf("%s: %w\n%s", command, err, out.String())
	}
	res := parseGoBench(&out)
	if len(res) == 0 {
		return nil, command, fmt.Errorf("%s printed no benchmark:\n%s", command, out.String())
	}
	return res, command, nil
}

// parseGoBench reads the result lines of `go test -bench` output, each under its "pkg:" line.
func parseGoBench(out io.Reader) []goBench {
	var res []goBench
	pkg := ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimPrefix(p, "github.com/o2ims-operator/o2ims-operator/")
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		b := goBench{Pkg: pkg, Name: m[1], Extra: map[string]float64{}}
		b.N, _ = strconv.Atoi(m[2])
		for _, pair := range benchPair.FindAllStringSubmatch(m[3], -1) {
			v, err := strconv.ParseFloat(pair[1], 64)
			if err != nil {
				continue
			}
			switch pair[2] {
			case "ns/op":
				b.NsOp = v
			case "B/op":
				b.BytesOp = v
			case "allocs/op":
				b.Allocs = v
			default:
				b.Extra[pair[2]] = v
			}
		}
		res = append(res, b)
	}
	return res
}
