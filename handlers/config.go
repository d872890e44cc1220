// Package handlers is the ProvisioningRequest chain on the framework: validate → claim hosts → Metal3 →
// Porch PackageVariant → CAPI Cluster → fulfilled, and release on delete. Handlers observe once per pass
// and fill the patch; the framework owns retries, patches, finalizers and events.
//
// Where each part lives: the registration (handlers.go), the steps of a pass (provision.go: one function
// per step, each saying whether the pass ends there) and of a delete (release.go); the PackageVariant
// (packagevariant.go) and the adoption of the one the Python image made (adoption.go); Porch's report on
// a changed spec (porch.go), the Cluster (cluster.go) and its rollout (rollout.go); whether a report is
// about the current spec (observed.go); the status (status.go), every message it may say (messages.go,
// the source of docs/chain.md's table) and the budget (budget.go); when the finalizer is needed
// (ownership.go). The hosts are the host step's (package hosts), which the chain calls through the Hosts
// interface.
//
// The chain never touches the workqueue or sends a patch (the request's changes go into Cause.Patch,
// other objects through package kube), serves no HTTP, and imports neither nbi/ nor netbox/.
package handlers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
)

// Config is the chain's configuration, read from the Python image's environment with its defaults.
type Config struct {
	// UpstreamRepo is the Porch repository of the cluster templates (UPSTREAM_PKG_REPO).
	UpstreamRepo string
	// DownstreamRepo receives the rendered cluster package (DOWNSTREAM_PKG_REPO; the Python image's "mgmt").
	DownstreamRepo string
	// Provisioner must be "capi" (CLUSTER_PROVISIONER).
	Provisioner string
	// CreationTimeout is the budget from metadata.creationTimestamp (CREATION_TIMEOUT seconds).
	CreationTimeout time.Duration
	// Requeue is the safety-net re-check while waiting; related watches wake sooner (REQUEUE_INTERVAL).
	Requeue time.Duration
	// PackageVariantNamespace and ClusterNamespace: where the Python image put them ("default").
	PackageVariantNamespace string
	ClusterNamespace        string
	// ClusterAPIVersion is "v1beta2", "v1beta1" or "" (auto: v1beta2 when served) (CLUSTER_API_VERSION).
	ClusterAPIVersion string
	// Metal3Namespace holds BareMetalHosts and BMC Secrets (METAL3_NAMESPACE).
	Metal3Namespace string
	// CredentialsNamespace holds the labelled BMC credentials Secrets (BMC_CREDENTIALS_NAMESPACE).
	CredentialsNamespace string
	// Selector restricts the operator to requests matching a label selector (PROVISIONING_REQUEST_SELECTOR),
	// to shard requests across operators; empty handles all.
	Selector string
	// BMCFaults and BMCAddresses: when a BMC fault quarantines a host, where credentials may go (bmcconfig.go).
	BMCFaults    hosts.FaultPolicy
	BMCAddresses hosts.AddressPolicy
}

// ConfigFromEnv reads the environment. A bad value is one clear line naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{
		UpstreamRepo:            orDefault(getenv("UPSTREAM_PKG_REPO"), "catalog-infra-capi"),
		DownstreamRepo:          orDefault(getenv("DOWNSTREAM_PKG_REPO"), "mgmt"),
		Provisioner:             orDefault(getenv("CLUSTER_PROVISIONER"), "capi"),
		PackageVariantNamespace: orDefault(getenv("PACKAGEVARIANT_NAMESPACE"), "default"),
		ClusterNamespace:        orDefault(getenv("CLUSTER_NAMESPACE"), "default"),
		ClusterAPIVersion:       strings.TrimSpace(getenv("CLUSTER_API_VERSION")),
		Metal3Namespace:         orDefault(getenv("METAL3_NAMESPACE"), "metal3"),
		CredentialsNamespace:    orDefault(getenv("BMC_CREDENTIALS_NAMESPACE"), "o2ims-bmc-credentials"),
		Selector:                strings.TrimSpace(getenv("PROVISIONING_REQUEST_SELECTOR")),
	}
	if cfg.Provisioner != "capi" {
		return cfg, fmt.Errorf("CLUSTER_PROVISIONER %q is not supported; the only provisioner is \"capi\"", cfg.Provisioner)
	}
	var err error
	if cfg.CreationTimeout, err = positiveSeconds(getenv, "CREATION_TIMEOUT", 1800); err != nil {
		return cfg, err
	}
	if cfg.Requeue, err = positiveSeconds(getenv, "REQUEUE_INTERVAL", 10); err != nil {
		return cfg, err
	}
	// RENDER_SETTLE (a time after which Porch's Ready was believed for a rewritten spec) is accepted, so a
	// Deployment that sets it still starts, and ignored: only Porch's published revision counts (porch.go).
	if err := bmcFromEnv(getenv, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Selector != "" {
		if _, err := labels.Parse(cfg.Selector); err != nil {
			return cfg, fmt.Errorf("PROVISIONING_REQUEST_SELECTOR %q is not a label selector: %v", cfg.Selector, err)
		}
	}
	switch cfg.ClusterAPIVersion {
	case "", "v1beta1", "v1beta2":
	default:
		return cfg, fmt.Errorf("CLUSTER_API_VERSION %q must be v1beta1 or v1beta2 (or unset to detect)", cfg.ClusterAPIVersion)
	}
	// Porch repositories are objects (DNS-1123 subdomain names); namespaces are DNS-1123 labels. A bad
	// one would otherwise surface only as a failed write per request.
	for _, n := range []struct {
		env, value string
		check      func(string) []string
	}{
		{"UPSTREAM_PKG_REPO", cfg.UpstreamRepo, validation.IsDNS1123Subdomain},
		{"DOWNSTREAM_PKG_REPO", cfg.DownstreamRepo, validation.IsDNS1123Subdomain},
		{"PACKAGEVARIANT_NAMESPACE", cfg.PackageVariantNamespace, validation.IsDNS1123Label},
		{"CLUSTER_NAMESPACE", cfg.ClusterNamespace, validation.IsDNS1123Label},
		{"METAL3_NAMESPACE", cfg.Metal3Namespace, validation.IsDNS1123Label},
		{"BMC_CREDENTIALS_NAMESPACE", cfg.CredentialsNamespace, validation.IsDNS1123Label},
	} {
		if errs := n.check(n.value); len(errs) > 0 {
			return cfg, fmt.Errorf("%s %q is not a valid name: %s", n.env, n.value, strings.Join(errs, "; "))
		}
	}
	return cfg, nil
}

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v == "" {
		return def
	}
	return v
}

func positiveSeconds(getenv func(string) string, name string, def int) (time.Duration, error) {
	raw := strings.TrimSpace(getenv(name))
	if raw == "" {
		return time.Duration(def) * time.Second, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s must be a positive integer number of seconds, got %q", name, raw)
	}
	return time.Duration(n) * time.Second, nil
}
