package app

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"

	"github.com/o2ims-operator/o2ims-operator/framework"
)

// options are the command line. The Python image's kopf arguments (--all-namespaces, --liveness=URL,
// -n, --standalone, --verbose/--debug/--quiet, even a leading "kopf run" and its .py files) are accepted,
// so a Deployment written for it keeps working.
type options struct {
	liveness        string
	kubeconfig      string
	workers         int
	qps             float64
	burst           int
	apiTimeout      time.Duration
	leaderElect     bool
	leaderElectID   string
	leaderElectNS   string
	logLevel        string
	logFormat       string
	allNamespaces   bool
	namespaces      multiFlag
	standalone      bool
	verbose, debug  bool
	quiet           bool
	shutdownTimeout time.Duration
	printVersion    bool
	debugPprof      string
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) Type() string       { return "string" }

// parseFlags reads the command line, with double-dash long flags and single-letter shorthands as every
// Kubernetes tool takes them (pflag, kubectl's library). Positional arguments are the Python image's only:
// a leading "kopf" (its command's name), then "run", then the .py files kopf ran (ignored), interleaved
// with flags as kopf allowed. Anything else is an error naming it, for one line on stderr; --help writes
// the usage to out and returns pflag.ErrHelp.
func parseFlags(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := pflag.NewFlagSet("o2ims-operator", pflag.ContinueOnError)
	// Parse errors are returned, not printed with the whole usage: run prints them on one line.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	fs.StringVar(&o.liveness, "liveness", "http://0.0.0.0:8080/healthz", "kopf's liveness URL: one listener serving PATH (probes), /readyz and /metrics")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, then the usual kubeconfig rules)")
	fs.IntVar(&o.workers, "workers", 8, "ProvisioningRequests handled concurrently")
	fs.Float64Var(&o.qps, "kube-api-qps", framework.DefaultQPS, "client-side rate limit of API-server requests per second, per API resource (each has its own bucket); 0 or less: none")
	fs.IntVar(&o.burst, "kube-api-burst", framework.DefaultBurst, "client-side burst of each API resource's bucket above --kube-api-qps")
	fs.DurationVar(&o.apiTimeout, "kube-api-timeout", 30*time.Second, "bound of every API-server call but watches")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "run several replicas; only the Lease holder handles requests")
	fs.StringVar(&o.leaderElectID, "leader-elect-id", "o2ims-operator", "name of the Lease")
	fs.StringVar(&o.leaderElectNS, "leader-elect-namespace", "", "namespace of the Lease (default: POD_NAMESPACE, else default)")
	fs.StringVar(&o.logLevel, "log-level", "", "DEBUG, INFO, WARNING, ERROR (default: LOG_LEVEL, else INFO)")
	fs.StringVar(&o.logFormat, "log-format", "auto", "json, console, or auto (json in a pod)")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 4*time.Second, "on SIGTERM, one deadline for passes in flight, the NBI's drain and the rest of the stop (inside a 5s grace period)")
	fs.BoolVar(&o.printVersion, "version", false, "print the version and exit")
	fs.StringVar(&o.debugPprof, "debug-pprof", "", "serve Go's profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060 (off by default)")
	// kopf compatibility: accepted, and harmless for a cluster-scoped resource.
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "kopf compatibility (ProvisioningRequests are cluster-scoped)")
	fs.VarP(&o.namespaces, "namespace", "n", "kopf compatibility; ignored (ProvisioningRequests are cluster-scoped)")
	fs.BoolVar(&o.standalone, "standalone", false, "kopf compatibility (no peering); leader election is --leader-elect")
	fs.BoolVar(&o.verbose, "verbose", false, "kopf compatibility: log level DEBUG")
	fs.BoolVar(&o.debug, "debug", false, "kopf compatibility: log level DEBUG")
	fs.BoolVar(&o.quiet, "quiet", false, "kopf compatibility: log level WARNING")
	// The Python image's CMD was `kopf run /usr/o2ims/src/manager.py ...`: that prefix is accepted, as the
	// arguments after our ENTRYPOINT or, through the image's `kopf` link, as the command.
	kopfRun := false
	if len(args) > 0 && args[0] == "kopf" {
		if len(args) == 1 || args[1] != "run" {
			got := "nothing"
			if len(args) > 1 {
				got = fmt.Sprintf("%q", args[1])
			}
			return nil, fmt.Errorf(`kopf: only "kopf run FILE.py [flags]" is supported, got %s after "kopf"`, got)
		}
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "run" {
		kopfRun, args = true, args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintln(out, "Usage: o2ims-operator [flags]   (also: kopf run FILE.py [flags], the Python image's command;\n       o2ims-operator netbox bootstrap, to prepare NetBox: see netbox --help)\n\nFlags:")
			fmt.Fprint(out, fs.FlagUsages())
			printEnvironment(out)
			return nil, err
		}
		return nil, fmt.Errorf("%w (see --help)", err)
	}
	// pflag collects positional arguments wherever they are (kopf's .py files among the flags).
	for _, a := range fs.Args() {
		if !kopfRun || !strings.HasSuffix(a, ".py") {
			return nil, fmt.Errorf(`unexpected argument %q: only flags are taken (and, as kopf did, "run FILE.py" first)`, a)
		}
	}
	return o, nil
}

func (o *options) level(getenv func(string) string) (zapcore.Level, error) {
	switch {
	case o.logLevel != "":
		return framework.ParseLogLevel(o.logLevel)
	case o.verbose || o.debug:
		return zapcore.DebugLevel, nil
	case o.quiet:
		return zapcore.WarnLevel, nil
	default:
		return framework.ParseLogLevel(getenv("LOG_LEVEL"))
	}
}
