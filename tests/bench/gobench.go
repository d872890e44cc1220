package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
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
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op)?(?:\s+([\d.]+) allocs/op)?`)

// runGoBenchmarks runs the framework dispatch and NBI handler benchmarks (their TestMain starts an API
// server, which the benchmarks themselves do not use).
func runGoBenchmarks(ctx context.Context, root string) ([]goBench, string, error) {
	args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", "1", "./framework/", "./nbi/"}
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
	var res []goBench
	pkg := ""
	sc := bufio.NewScanner(&out)
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
		b := goBench{Pkg: pkg, Name: m[1]}
		b.N, _ = strconv.Atoi(m[2])
		b.NsOp, _ = strconv.ParseFloat(m[3], 64)
		b.BytesOp, _ = strconv.ParseFloat(m[4], 64)
		b.Allocs, _ = strconv.ParseFloat(m[5], 64)
		res = append(res, b)
	}
	if len(res) == 0 {
		return nil, command, fmt.Errorf("%s printed no benchmark:\n%s", command, out.String())
	}
	return res, command, nil
}
