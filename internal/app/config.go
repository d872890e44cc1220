package app

import (
	"fmt"
	"net"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/handlers"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

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
	for _, w := range append(ignoredPythonSettings(getenv), unservedSettings(getenv, c.netboxOn)...) {
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

// unservedSettings are the warnings for settings whose feature needs another that is not set: the
// performance API measures the inventory's hosts, so PROMETHEUS_URL alone serves nothing.
func unservedSettings(getenv func(string) string, netboxOn bool) []string {
	if !netboxOn && strings.TrimSpace(getenv("PROMETHEUS_URL")) != "" {
		return []string{"PROMETHEUS_URL is set but NETBOX_URL is not: the performance API measures the inventory's hosts, so it is not served"}
	}
	return nil
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
