package handlers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
)

// bmcFromEnv reads when a BMC fault quarantines a host (BMC_FAULT_*, BMC_MAX_REPLACEMENTS; defaults:
// hosts.DefaultFaultPolicy, which says why) and where BMC credentials may be sent (BMC_ALLOW_CIDRS,
// BMC_ALLOWED_SCHEMES).
func bmcFromEnv(getenv func(string) string, cfg *Config) error {
	d := hosts.DefaultFaultPolicy
	p := &cfg.BMCFaults
	var err error
	if p.Grace, err = positiveSeconds(getenv, "BMC_FAULT_GRACE", int(d.Grace.Seconds())); err != nil {
		return err
	}
	if p.BurstWindow, err = positiveSeconds(getenv, "BMC_FAULT_BURST_WINDOW", int(d.BurstWindow.Seconds())); err != nil {
		return err
	}
	counts := []struct {
		name string
		def  int
		into func(int)
	}{
		{"BMC_FAULT_ERROR_COUNT", int(d.ErrorCount), func(n int) { p.ErrorCount = int64(n) }},
		{"BMC_FAULT_BURST", d.Burst, func(n int) { p.Burst = n }},
		{"BMC_MAX_REPLACEMENTS", d.MaxReplacements, func(n int) { p.MaxReplacements = n }},
	}
	for _, c := range counts {
		n, err := nonNegative(getenv, c.name, c.def)
		if err != nil {
			return err
		}
		c.into(n)
	}
	cfg.BMCAddresses, err = hosts.ParseAddressPolicy(getenv("BMC_ALLOW_CIDRS"), getenv("BMC_ALLOWED_SCHEMES"))
	return err
}

// nonNegative reads a count (0 allowed: BMC_FAULT_BURST 0 never quarantines for a BMC fault).
func nonNegative(getenv func(string) string, name string, def int) (int, error) {
	raw := strings.TrimSpace(getenv(name))
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a non-negative integer, got %q", name, raw)
	}
	return n, nil
}
