// o2ims-operator fulfils O-RAN O2IMS ProvisioningRequests for Nephio: a drop-in replacement for Nephio's
// Python (kopf) O2IMS operator image, with an embedded O2IMS northbound API and an optional NetBox
// inventory that claims bare-metal hosts and registers them with Metal3.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/handlers"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/provisioning"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// version is set at build time (-ldflags -X main.version=...).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, commandLine(os.Args), os.Getenv, os.Stdout, os.Stderr))
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

// versionLine is what --version prints: ours, then Go's and, when the build recorded them, the module's
// version and the commit.
func versionLine() string {
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

// ignoredPythonSettings are the warnings for the Python image's settings that have no meaning here, one
// per setting present: a setting silently dropped would look honoured.
func ignoredPythonSettings(getenv func(string) string) []string {
	var out []string
	for _, v := range []string{"TOKEN", "KUBERNETES_BASE_URL"} {
		if getenv(v) != "" {
			out = append(out, v+" is the Python image's transport setting and is ignored: the in-cluster service account (or --kubeconfig) is used, with its token re-read on rotation")
		}
	}
	if getenv("HTTPS_VERIFY") != "" {
		// The Python image verified TLS only with HTTPS_VERIFY set (any value, "false" included).
		out = append(out, "HTTPS_VERIFY is the Python image's setting and is ignored: the API server's certificate is always "+
			"verified (with the service account's CA, or KUBERNETES_CA_FILE); UNSAFE_SKIP_TLS_VERIFY=true turns that off")
	}
	if getenv("RENDER_SETTLE") != "" {
		// It was a time after which Porch's Ready was believed for a rewritten spec: a timer, never a report.
		out = append(out, "RENDER_SETTLE is ignored: after a spec change only Porch's published revision of the new spec, "+
			"then the Cluster's rollout, count as rendered")
	}
	return out
}

// nbiExposure refuses a northbound API on a non-loopback address without TLS: callers' bearer tokens
// (NBI_AUTH=kubernetes) and requests would cross the pod network in clear. NBI_INSECURE=true allows it
// anyway; the answer says so, for a warning once the logger exists. A refusal stops only the NBI, not the
// process (refused says why): a Deployment written for the Python image may set NBI_HOST=0.0.0.0, and the
// provisioning chain must keep working after the image swap.
func nbiExposure(cfg nbi.Config, insecure string) (allowed bool, refused string, err error) {
	allow := false
	switch strings.ToLower(strings.TrimSpace(insecure)) {
	case "", "false":
	case "true":
		allow = true
	default:
		return false, "", fmt.Errorf("NBI_INSECURE=%q: want true or false", insecure)
	}
	if loopbackHost(cfg.Host) || cfg.TLSCertFile != "" {
		return false, "", nil
	}
	if !allow {
		return false, fmt.Sprintf("NBI_HOST=%q is not a loopback address and the NBI has no TLS, so it is not served (the provisioning chain runs): set NBI_HOST=127.0.0.1, or NBI_TLS_CERT_FILE and NBI_TLS_KEY_FILE (manifests/nbi-tls), or NBI_INSECURE=true to serve it in clear", cfg.Host), nil
	}
	return true, "", nil
}

// loopbackHost answers whether host only ever names this machine's loopback interface: "localhost" or a
// loopback IP. Any other name may resolve elsewhere, and 0.0.0.0 or :: listen on every interface.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// run is the operator process; it returns the exit code. A command line it cannot take ends it with one
// line on stderr and exit 2, a configuration error with one line and exit 1, before anything starts.
// --help and --version answer on stdout.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "netbox" { // main_bootstrap.go
		return runNetbox(ctx, args[1:], getenv, stdout, stderr)
	}
	o, code, done := readCommandLine(args, stdout, stderr)
	if done {
		return code
	}
	cfg, err := readConfig(o, getenv)
	if err != nil {
		return failed(stderr, err)
	}
	log := startLogging(o, cfg, getenv)
	defer func() { _ = log.Sync() }()
	w := &wiring{opts: o, cfg: cfg, getenv: getenv, log: log}
	for _, step := range []func() error{
		w.tuneProcess,   // memory limit, --debug-pprof
		w.connect,       // API clients, the Cluster API version
		w.newOperator,   // the framework
		w.addInventory,  // NetBox, its inventory and the host step (with NETBOX_URL)
		w.addChain,      // the provisioning chain's handlers
		w.addNorthbound, // the NBI, with the inventory's routes and notifier
	} {
		if err := step(); err != nil {
			return failed(stderr, err)
		}
	}
	log.Info("starting", zap.String("version", version), zap.String("clusterAPI", w.clusterVersion),
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
func readCommandLine(args []string, stdout, stderr io.Writer) (o *options, code int, done bool) {
	o, err := parseFlags(args, stdout)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return nil, 0, true
	case err != nil:
		fmt.Fprintf(stderr, "o2ims-operator: %v\n", err)
		return nil, 2, true
	case o.printVersion:
		fmt.Fprintln(stdout, versionLine())
		return nil, 0, true
	}
	return o, 0, false
}

// config is what run reads from the command line's values and the environment, all checked before
// anything starts.
type config struct {
	level       zapcore.Level
	jsonLogs    bool
	chain       handlers.Config
	nbi         nbi.Config
	nbiInsecure bool   // NBI_INSECURE=true allowed it in clear on a non-loopback address: said once logging
	nbiRefused  string // why the NBI is not served (nbiExposure); the rest runs, /readyz says it
	netbox      netbox.Config
	netboxOn    bool // NETBOX_URL set: the inventory and the host step
	timeForm    kopf.TimeForm
	metricsAuth string // METRICS_AUTH: "" or framework.MetricsAuthKubernetes
}

// readConfig reads and checks the configuration; the first error is the one reported.
func readConfig(o *options, getenv func(string) string) (*config, error) {
	c := &config{}
	var err error
	if c.level, err = o.level(getenv); err != nil {
		return nil, err
	}
	if _, _, err := framework.ParseLiveness(o.liveness); err != nil {
		return nil, err
	}
	if c.chain, err = handlers.ConfigFromEnv(getenv); err != nil {
		return nil, err
	}
	if c.nbi, err = nbi.ConfigFromEnv(getenv); err != nil {
		return nil, err
	}
	if c.nbiInsecure, c.nbiRefused, err = nbiExposure(c.nbi, getenv("NBI_INSECURE")); err != nil {
		return nil, err
	}
	if c.netbox, c.netboxOn, err = netbox.ConfigFromEnv(getenv); err != nil {
		return nil, err
	}
	if err := checkSMOConfig(getenv, c.netboxOn); err != nil {
		return nil, err
	}
	if c.timeForm, err = kopf.ParseTimeForm(getenv("KOPF_TIME_FORMAT")); err != nil {
		return nil, err
	}
	switch c.metricsAuth = strings.TrimSpace(getenv("METRICS_AUTH")); c.metricsAuth {
	case "", framework.MetricsAuthKubernetes:
	default:
		return nil, fmt.Errorf("METRICS_AUTH=%q: want %q or nothing", c.metricsAuth, framework.MetricsAuthKubernetes)
	}
	c.jsonLogs = o.logFormat == "json" || (o.logFormat == "auto" && framework.InCluster())
	if o.logFormat != "json" && o.logFormat != "console" && o.logFormat != "auto" {
		return nil, fmt.Errorf("--log-format must be json, console or auto, got %q", o.logFormat)
	}
	return c, nil
}

// startLogging builds the logger and says, once, what of the configuration is ignored or unsafe.
func startLogging(o *options, c *config, getenv func(string) string) *zap.Logger {
	log := redactErrors(framework.NewLogger(c.level, c.jsonLogs))
	for _, w := range ignoredPythonSettings(getenv) {
		log.Warn(w)
	}
	if c.nbiInsecure {
		log.Warn("the northbound API listens on a non-loopback address without TLS (NBI_INSECURE=true): bearer tokens and requests cross the network in clear",
			zap.String("NBI_HOST", c.nbi.Host))
	}
	if c.nbiRefused != "" {
		log.Error("the northbound API is not served: " + c.nbiRefused)
	}
	if len(o.namespaces) > 0 {
		log.Info("--namespace is ignored: ProvisioningRequests are cluster-scoped", zap.Strings("namespaces", o.namespaces))
	}
	return log
}

// wiring is what run builds, step by step, before the operator runs.
type wiring struct {
	opts   *options
	cfg    *config
	getenv func(string) string
	log    *zap.Logger

	clients        *framework.Clients
	clusterVersion string
	podNamespace   string
	op             *framework.Operator
	inv            *inventoryWiring // main_inventory.go; nil without NETBOX_URL
	alarmsAPI      nbi.API          // main_alarms.go; nil without NETBOX_URL
	performanceAPI nbi.API          // main_performance.go; nil without NETBOX_URL
	hostStep       handlers.Hosts   // nil without NETBOX_URL
}

// tuneProcess sets Go's memory limit from the container's and serves the profiles if asked to.
func (w *wiring) tuneProcess() error {
	if soft := applyMemoryLimit(w.getenv, os.ReadFile); soft > 0 {
		w.log.Info("Go memory limit set from the container's memory limit", zap.Int64("bytes", soft))
	}
	if w.opts.debugPprof != "" {
		if _, err := startPprof(w.opts.debugPprof, w.log); err != nil {
			return err
		}
	}
	return nil
}

// connect builds the API clients and settles the Cluster API version, which decides which informer is
// started, before the watches are.
func (w *wiring) connect() error {
	restCfg, err := framework.LoadConfig(w.opts.kubeconfig, w.getenv)
	if err != nil {
		return err
	}
	clientOpts := framework.DefaultClientOptions()
	clientOpts.QPS, clientOpts.Burst, clientOpts.Timeout = float32(w.opts.qps), w.opts.burst, w.opts.apiTimeout
	clientOpts.UserAgent = "o2ims-operator/" + version
	if w.clients, err = framework.NewClients(restCfg, clientOpts); err != nil {
		return err
	}
	w.clusterVersion, err = handlers.DetectClusterVersion(w.clients.Kubernetes.Discovery(), w.cfg.chain.ClusterAPIVersion)
	return err
}

// newOperator builds the framework's operator: its lease in --leader-elect-namespace, else POD_NAMESPACE.
func (w *wiring) newOperator() error {
	o := w.opts
	w.podNamespace = w.getenv("POD_NAMESPACE")
	leNS := o.leaderElectNS
	if leNS == "" {
		leNS = w.podNamespace
	}
	var err error
	w.op, err = framework.New(w.clients, framework.Options{
		Name: "o2ims-operator", MetricsNamespace: "o2ims", Prefix: handlers.Prefix,
		Workers: o.workers, Liveness: o.liveness, MetricsAuth: w.cfg.metricsAuth, Namespace: w.podNamespace,
		LeaderElect: o.leaderElect, LeaderElectionID: o.leaderElectID, LeaderElectionNamespace: leNS,
		ShutdownTimeout: o.shutdownTimeout, Logger: w.log, TimeForm: w.cfg.timeForm, Remedy: remedy(),
		Redact: netcause.Redact,
	})
	return err
}

// addInventory, with NETBOX_URL, builds the NetBox client, the inventory view and the host step.
func (w *wiring) addInventory() error {
	if !w.cfg.netboxOn {
		return nil
	}
	nb, err := netbox.New(w.cfg.netbox, w.log.Named("netbox"), w.op.Registry())
	if err != nil {
		return err
	}
	// Reachability, version (ETags need ≥ 4.6) and the custom fields, once, before watching starts: a
	// wrong version, token or schema stops the operator; NetBox down does not — the operator runs
	// degraded (requests with hosts wait, /readyz says why) and the check goes on until it passes
	// (netbox/availability.go).
	w.op.OnStartup("netbox", nb.Gate.Start)
	w.op.OnDegraded("netbox", nb.Gate.Degraded)
	if w.inv, err = newInventory(w.getenv, w.cfg.netbox, nb, w.op, w.podNamespace, w.log); err != nil {
		return err
	}
	if w.alarmsAPI, err = w.inv.serveAlarms(cacheStore{w.op}, nb, w.op, w.cfg.chain, w.clusterVersion, w.podNamespace); err != nil {
		return err
	}
	if w.performanceAPI, err = w.inv.servePerformance(w.op, w.podNamespace); err != nil {
		return err
	}
	// The chain records the resource ids the inventory answers: the same O-Cloud id.
	w.hostStep = hosts.New(handlers.HostsConfig(w.cfg.chain, w.inv.cfg.OCloudID), nb, w.inv.view, w.clients, w.op.Cache(), w.op.Registry())
	return nil
}

// addChain registers the provisioning chain's handlers.
func (w *wiring) addChain() error {
	handlers.New(w.cfg.chain, w.clusterVersion, w.clients, w.hostStep, w.op.Registry()).Register(w.op)
	return nil
}

// addNorthbound builds the NBI — the provisioning API and the inventory API (with its notifier when there
// is an inventory, only its root's errors otherwise) — and adds it to the operator: a runnable of every
// replica, drained by a cleanup activity, probed for liveness.
func (w *wiring) addNorthbound() error {
	// The NBI refuses with 400 what the chain would fail, so it needs the chain's rules of this run.
	nbiCfg := w.cfg.nbi
	nbiCfg.Chain = nbi.ChainRules{Inventory: w.hostStep != nil}
	if w.hostStep != nil {
		nbiCfg.Chain.Reserved = w.hostStep.Reserved()
	}
	var srv *nbi.Server // its address is read by the callback policy once it listens
	nbiAddr := func() string {
		if srv == nil {
			return "" // not served (nbiExposure)
		}
		return srv.Addr()
	}
	invAPI, err := w.inv.serve(cacheStore{w.op}, nbiAddr, w.op, w.cfg.chain, w.clusterVersion, w.podNamespace)
	if err != nil {
		return err
	}
	if why := w.cfg.nbiRefused; why != "" {
		// The chain runs without it: /readyz stays 200 with a line saying why, and so does the liveness
		// answer, so neither probe restarts a pod whose only fault is the NBI's address.
		w.op.OnDegraded("northbound", func() string { return why })
		w.op.OnProbe("northbound", func(context.Context) (any, error) {
			return map[string]string{"northbound": "not served: " + why}, nil
		})
		return nil
	}
	provAPI, err := provisioning.New(cacheStore{w.op}, w.clients.Dynamic, invAPI.ResourceIDs)
	if err != nil {
		return err
	}
	if srv, err = nbi.New(nbiCfg, w.clients.Kubernetes, w.log.Named("nbi"), w.op.Registry(), provAPI, invAPI, w.alarms(), w.performance()); err != nil {
		return err
	}
	// A port in use, or the serving loop ending by itself, stops the operator; the drain comes after the
	// passes, within the one stop deadline.
	w.op.Add(northbound{srv: srv, log: w.log})
	w.op.OnCleanup("stop_northbound", srv.Shutdown)
	op := w.op
	op.OnProbe("now", func(context.Context) (any, error) { return time.Now().UTC().Format(time.RFC3339Nano), nil })
	op.OnProbe("northbound", func(ctx context.Context) (any, error) {
		// Until the startup activities before it are done (NetBox's check, bounded by NETBOX_TIMEOUT)
		// there is no API to probe: that is starting, not dead, and the liveness probe must not restart us.
		if srv.Addr() == "" && !op.Ready() {
			return map[string]string{"northbound": "not started yet: waiting for the startup activities"}, nil
		}
		return srv.Probe(ctx)
	})
	return nil
}

// cacheStore serves the NBI's reads from the operator's informer cache; until the cache has synced it
// refuses (503) rather than answer an empty list.
type cacheStore struct{ op *framework.Operator }

var _ nbi.RevisionedStore = cacheStore{}

var errNotSynced = errors.New("the operator's cache of provisioning requests is not synced yet")

func (s cacheStore) List() ([]*unstructured.Unstructured, error) {
	if !s.op.Ready() {
		return nil, errNotSynced
	}
	return s.op.Cache().List(v1alpha1.GVR, "")
}

// Revision lets the NBI keep a list's id order between pages until the cache changes; like List, it
// refuses while the cache is not synced (at start, or once stopping), so no kept order is answered then.
func (s cacheStore) Revision() (uint64, error) {
	if !s.op.Ready() {
		return 0, errNotSynced
	}
	return s.op.Cache().Revision(v1alpha1.GVR)
}

func (s cacheStore) Get(name string) (*unstructured.Unstructured, bool, error) {
	if !s.op.Ready() {
		return nil, false, errNotSynced
	}
	return s.op.Cache().Peek(v1alpha1.GVR, "", name) // read-only, as nbi.Store allows
}

// northbound is the NBI as a runnable of every replica: Start binds its listener and serves until the
// operator stops (Start then returns; the listener drains in the cleanup activity stop_northbound, once
// the passes have stopped, within the one stop deadline). A port in use, or the serving loop ending by
// itself, is Start's error, which stops the operator: exit non-zero and the pod is restarted.
type northbound struct {
	srv *nbi.Server
	log *zap.Logger
}

func (n northbound) NeedLeaderElection() bool { return false }

func (n northbound) Start(ctx context.Context) error {
	if err := n.srv.Start(); err != nil {
		return err
	}
	n.log.Info("northbound API listening", zap.String("address", n.srv.Addr()))
	select {
	case <-ctx.Done():
		return nil
	case err := <-n.srv.Stopped():
		return err // says so in one line already
	}
}
