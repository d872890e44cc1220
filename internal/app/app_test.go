package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi"
)

// run is the process as Main runs it once commandLine has read os.Args, built as an unstamped build is
// (version "dev").
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return Process{Args: args, Getenv: getenv, Stdout: stdout, Stderr: stderr, Version: "dev"}.run(ctx)
}

// Main reads os.Args as they come (the program's name first, `kopf` through the image's link) and says
// the version main was built with.
func TestMainReadsTheProgramNameAndTheBuiltVersion(t *testing.T) {
	for _, argv := range [][]string{
		{"/usr/local/bin/o2ims-operator", "--version"},
		{"/usr/local/bin/kopf", "run", "/usr/o2ims/src/manager.py", "--version"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, Main(context.Background(), Process{Args: argv, Stdout: &stdout, Stderr: &stderr, Version: "v1.2.3"}), argv)
		assert.True(t, strings.HasPrefix(stdout.String(), "o2ims-operator v1.2.3 go1."), stdout.String())
		assert.Empty(t, stderr.String())
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, Main(context.Background(), Process{Args: []string{"o2ims-operator", "kopf"}, Stdout: &stdout, Stderr: &stderr}))
	assert.Contains(t, stderr.String(), `got nothing after "kopf"`)
}

func TestFlagsAcceptThePythonImagesArguments(t *testing.T) {
	var out bytes.Buffer
	o, err := parseFlags(strings.Fields("run /usr/o2ims/src/manager.py --all-namespaces --liveness=http://0.0.0.0:8080/healthz -n default --standalone --verbose"), &out)
	require.NoError(t, err)
	assert.True(t, o.allNamespaces)
	assert.Equal(t, "http://0.0.0.0:8080/healthz", o.liveness)
	assert.Equal(t, multiFlag{"default"}, o.namespaces)
	assert.True(t, o.standalone)
	assert.True(t, o.verbose)

	// The Python Deployment's args after our ENTRYPOINT, and its command through the image's kopf link
	// (Main reads `kopf run …` as `o2ims-operator kopf run …`): flags after and between the .py files.
	for _, line := range []string{
		"kopf run /usr/o2ims/src/manager.py --all-namespaces",
		"kopf run --all-namespaces /usr/o2ims/src/manager.py --workers=3 other.py",
		"run --all-namespaces --workers=3",
	} {
		o, err := parseFlags(strings.Fields(line), &out)
		require.NoError(t, err, line)
		assert.True(t, o.allNamespaces, line)
	}
	o, err = parseFlags(strings.Fields("kopf run --all-namespaces /usr/o2ims/src/manager.py --workers=3 other.py"), &out)
	require.NoError(t, err)
	assert.Equal(t, 3, o.workers, "a flag after a .py file is read")
	assert.Empty(t, out.String(), "nothing printed")
}

func TestKopfAsTheProgramNameReadsAsALeadingKopf(t *testing.T) {
	assert.Equal(t, []string{"kopf", "run", "m.py"}, commandLine([]string{"kopf", "run", "m.py"}))
	assert.Equal(t, []string{"kopf", "run", "m.py"}, commandLine([]string{"/usr/local/bin/kopf", "run", "m.py"}))
	assert.Equal(t, []string{"kopf"}, commandLine([]string{"kopf"}))
	assert.Equal(t, []string{"--version"}, commandLine([]string{"/usr/local/bin/o2ims-operator", "--version"}))
	assert.Equal(t, []string{"kopf", "run"}, commandLine([]string{"o2ims-operator", "kopf", "run"}))
	assert.Empty(t, commandLine(nil))
}

// A command line the operator cannot take is one line on stderr naming what is wrong, exit 2, before
// anything starts (getenv is never consulted: it would panic).
func TestWrongArgumentsAreOneLineOnStderrAndExitTwo(t *testing.T) {
	for line, want := range map[string]string{
		"extra":                               `o2ims-operator: unexpected argument "extra": only flags are taken (and, as kopf did, "run FILE.py" first)`,
		"--workers=2 extra":                   `unexpected argument "extra"`,
		"/usr/o2ims/src/manager.py":           `unexpected argument "/usr/o2ims/src/manager.py"`,
		"run manager.pyc":                     `unexpected argument "manager.pyc"`,
		"run m.py --all-namespaces serve":     `unexpected argument "serve"`,
		"--all-namespaces run m.py":           `unexpected argument "run"`,
		"kopf":                                `o2ims-operator: kopf: only "kopf run FILE.py [flags]" is supported, got nothing after "kopf"`,
		"kopf serve":                          `got "serve" after "kopf"`,
		"kopf --all-namespaces":               `got "--all-namespaces" after "kopf"`,
		"run kopf":                            `unexpected argument "kopf"`,
		"--bogus":                             `o2ims-operator: unknown flag: --bogus (see --help)`,
		"kopf run m.py --workers=many":        `invalid argument "many" for "--workers" flag`,
		"--liveness":                          `flag needs an argument: --liveness`,
		"-kube-api-burst=5":                   `unknown shorthand flag: 'k' in -kube-api-burst=5`,
		"kopf run m.py --all-namespaces -- x": `unexpected argument "x"`,
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), strings.Fields(line), nil, &stdout, &stderr)
		assert.Equal(t, 2, code, line)
		assert.Empty(t, stdout.String(), line)
		assert.Contains(t, stderr.String(), want, line)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "%s: one line, got %q", line, stderr.String())
		assert.True(t, strings.HasPrefix(stderr.String(), "o2ims-operator: "), line)
	}
}

func TestVersionAndHelpAnswerOnStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"--version"}, nil, &stdout, &stderr))
	assert.Empty(t, stderr.String())
	assert.Regexp(t, `^o2ims-operator dev go1\.\d+\S* \w+/\w+( .*)?\n$`, stdout.String())

	stdout.Reset()
	require.Equal(t, 0, run(context.Background(), strings.Fields("kopf run m.py --version"), nil, &stdout, &stderr))
	assert.True(t, strings.HasPrefix(stdout.String(), "o2ims-operator dev "), stdout.String())
	assert.Empty(t, stderr.String())

	stdout.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"--help"}, nil, &stdout, &stderr))
	assert.Empty(t, stderr.String())
	assert.Contains(t, stdout.String(), "Usage: o2ims-operator [flags]")
	// Long flags with two dashes, kopf's shorthands beside theirs, as kubectl prints them.
	for _, want := range []string{"      --liveness string", "      --kube-api-burst int", "  -A, --all-namespaces", "  -n, --namespace string"} {
		assert.Contains(t, stdout.String(), want)
	}
	assert.NotRegexp(t, `(?m)^  -[a-z][a-z-]+`, stdout.String(), "a single-dash long flag")
}

// Long flags take a value after "=" or as the next argument, as in every Kubernetes tool; kopf's -A and
// -n shorthands stay, and the Python Deployment's exact arguments read as before.
func TestFlagsAreKubernetesStyle(t *testing.T) {
	o, err := parseFlags(strings.Fields("--kube-api-burst 7 --workers=3 -A -n ns1 --namespace ns2 --leader-elect"), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 7, o.burst)
	assert.Equal(t, 3, o.workers)
	assert.True(t, o.allNamespaces)
	assert.True(t, o.leaderElect)
	assert.Equal(t, multiFlag{"ns1", "ns2"}, o.namespaces)

	o, err = parseFlags([]string{"--all-namespaces", "--liveness=http://0.0.0.0:8080/healthz"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.allNamespaces)
	assert.Equal(t, "http://0.0.0.0:8080/healthz", o.liveness)
	assert.Equal(t, 8, o.workers)
}

func TestBadEnvironmentIsOneLineAndExitOne(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), nil, func(k string) string {
		if k == "CREATION_TIMEOUT" {
			return "soon"
		}
		return ""
	}, io.Discard, &stderr)
	assert.Equal(t, 1, code)
	assert.Equal(t, "o2ims-operator: CREATION_TIMEOUT must be a positive integer number of seconds, got \"soon\"\n", stderr.String())
}

// Each Python transport setting that means nothing here is named in a warning; none is dropped silently.
func TestIgnoredPythonSettingsAreNamed(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	assert.Empty(t, ignoredPythonSettings(env(nil)))
	got := ignoredPythonSettings(env(map[string]string{
		"TOKEN": "/var/run/secrets/kubernetes.io/serviceaccount/token", "KUBERNETES_BASE_URL": "https://kubernetes.default.svc", "HTTPS_VERIFY": "false",
	}))
	require.Len(t, got, 3)
	for i, name := range []string{"TOKEN", "KUBERNETES_BASE_URL", "HTTPS_VERIFY"} {
		assert.True(t, strings.HasPrefix(got[i], name+" is the Python image's"), got[i])
	}
	assert.Contains(t, got[2], "always verified")
}

// PROMETHEUS_URL without NETBOX_URL serves nothing (the performance API measures the inventory's hosts):
// a warning says so rather than leaving the setting looking honoured.
func TestPrometheusWithoutNetBoxIsNamed(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	prom := env(map[string]string{"PROMETHEUS_URL": "http://prometheus:9090"})
	assert.Empty(t, unservedSettings(prom, true))
	assert.Empty(t, unservedSettings(env(nil), false))
	got := unservedSettings(prom, false)
	require.Len(t, got, 1)
	assert.Equal(t, "PROMETHEUS_URL is set but NETBOX_URL is not: the performance API measures the inventory's hosts, so it is not served", got[0])
}

// A northbound API on a non-loopback address without TLS is not served, with one reason that says what
// to set, unless NBI_INSECURE=true says it is meant (then it is, with a warning); the rest of the operator
// runs either way (tests/manifests: TestNonLoopbackNBIWithoutTLSNeedsNBIInsecure). A bad NBI_INSECURE
// still stops it at start.
func TestNonLoopbackNBIWithoutTLSIsRefusedUnlessInsecure(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, host := range []string{"0.0.0.0", "::", "10.1.2.3", "o2ims.example.com"} {
		cfg := nbi.DefaultConfig()
		cfg.Host = host
		insecure, refused, err := nbiExposure(cfg, "")
		require.NoError(t, err, host)
		assert.False(t, insecure, host)
		assert.Equal(t, fmt.Sprintf("NBI_HOST=%q is not a loopback address and the NBI has no TLS, so it is not served (the provisioning chain runs): set NBI_HOST=127.0.0.1, or NBI_TLS_CERT_FILE and NBI_TLS_KEY_FILE (manifests/nbi-tls), or NBI_INSECURE=true to serve it in clear", host),
			refused)
	}
	var stderr bytes.Buffer
	code := run(context.Background(), nil, env(map[string]string{"NBI_HOST": "0.0.0.0", "NBI_INSECURE": "maybe"}), io.Discard, &stderr)
	assert.Equal(t, 1, code)
	assert.Equal(t, "o2ims-operator: NBI_INSECURE=\"maybe\": want true or false\n", stderr.String())

	for _, c := range []struct {
		host, insecure, cert string
		allowedInsecure      bool
	}{
		{"127.0.0.1", "", "", false},
		{"localhost", "", "", false},
		{"::1", "", "", false},
		{"127.0.0.2", "false", "", false},
		{"0.0.0.0", "", "/tls/tls.crt", false},
		{"0.0.0.0", "true", "", true},
		{"10.1.2.3", "TRUE", "", true},
		{"0.0.0.0", "true", "/tls/tls.crt", false},
	} {
		cfg := nbi.DefaultConfig()
		cfg.Host = c.host
		if c.cert != "" {
			cfg.TLSCertFile, cfg.TLSKeyFile = c.cert, "/tls/tls.key"
		}
		insecure, refused, err := nbiExposure(cfg, c.insecure)
		require.NoError(t, err, "%+v", c)
		assert.Empty(t, refused, "%+v", c)
		assert.Equal(t, c.allowedInsecure, insecure, "%+v", c)
	}
}
