// Package app is the o2ims-operator process: its command line and environment (the table in env.go, which
// --help prints and docs/configuration.md shows), then one wiring (wiring.go) that builds every part once
// — API clients, framework, NetBox, the inventory, the chain, the northbound APIs — and adds each
// long-running part to the operator as a runnable. It decides nothing about a request or a host. Only the
// root's main.go imports it (tests/policy).
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
)

// Process is what main hands the operator process: its arguments as os.Args has them (the program's
// name first: started as `kopf`, the Python image's command reads as ours), its environment and output,
// and the version it was built as.
type Process struct {
	Args           []string
	Getenv         func(string) string
	Stdout, Stderr io.Writer
	Version        string
}

// Main runs the process and answers its exit code.
func Main(ctx context.Context, p Process) int {
	p.Args = commandLine(p.Args)
	return p.run(ctx)
}

// commandLine is the arguments as run reads them. Started as `kopf` (the image's link to this binary, for a
// Deployment whose command is the Python image's `kopf run …`), the name is the first argument, so
// `kopf run x.py --all-namespaces` reads as `o2ims-operator kopf run x.py --all-namespaces`.
func commandLine(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	if filepath.Base(argv[0]) == "kopf" {
		return append([]string{"kopf"}, argv[1:]...)
	}
	return argv[1:]
}

// run is the operator process; it returns the exit code. A command line it cannot take ends it with one
// line on stderr and exit 2, a configuration error with one line and exit 1, before anything starts.
// --help and --version answer on stdout.
func (p Process) run(ctx context.Context) int {
	args, getenv, stderr := p.Args, p.Getenv, p.Stderr
	if len(args) > 0 && args[0] == "netbox" { // bootstrap.go
		return runNetbox(ctx, args[1:], getenv, p.Stdout, stderr)
	}
	o, code, done := p.readCommandLine()
	if done {
		return code
	}
	cfg, err := readConfig(o, getenv)
	if err != nil {
		return failed(stderr, err)
	}
	log := startLogging(o, cfg, getenv)
	defer func() { _ = log.Sync() }()
	w := &wiring{opts: o, cfg: cfg, getenv: getenv, log: log, version: p.Version}
	for _, step := range []func() error{
		w.tuneProcess,   // memory limit, --debug-pprof
		w.connect,       // API clients, the Cluster API version
		w.newOperator,   // the framework
		w.addInventory,  // NetBox, its inventory and the host step (with NETBOX_URL)
		w.addChain,      // the provisioning chain's handlers
		w.addNorthbound, // the NBI, with the inventory's routes and notifier
		w.addRunnables,  // every long-running part built above
	} {
		if err := step(); err != nil {
			return failed(stderr, err)
		}
	}
	log.Info("starting", zap.String("version", p.Version), zap.String("clusterAPI", w.clusterVersion),
		zap.Bool("inventory", cfg.netboxOn), zap.Bool("leaderElect", o.leaderElect))
	if err := w.op.Run(ctx); err != nil {
		log.Error("stopped with an error", zap.Error(err))
		return failed(stderr, err)
	}
	log.Info("stopped")
	return 0
}

// failed writes err as the one line on stderr and answers exit code 1.
func failed(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "o2ims-operator: %v\n", err)
	return 1
}

// readCommandLine parses the flags; done: run ends with code (--help and --version 0, a bad command
// line 2 with its one line on stderr).
func (p Process) readCommandLine() (o *options, code int, done bool) {
	stdout, stderr := p.Stdout, p.Stderr
	o, err := parseFlags(p.Args, stdout)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return nil, 0, true
	case err != nil:
		fmt.Fprintf(stderr, "o2ims-operator: %v\n", err)
		return nil, 2, true
	case o.printVersion:
		fmt.Fprintln(stdout, versionLine(p.Version))
		return nil, 0, true
	}
	return o, 0, false
}

// versionLine is what --version prints: ours, then Go's and, when the build recorded them, the module's
// version and the commit.
func versionLine(version string) string {
	line := fmt.Sprintf("o2ims-operator %s %s %s/%s", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return line
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		line += " module " + info.Main.Path + "@" + v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			line += " commit " + s.Value
		}
	}
	return line
}
