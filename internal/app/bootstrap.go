package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

const netboxUsage = `Usage: o2ims-operator netbox bootstrap

Prepares NetBox for the operator, from the operator's own environment (NETBOX_URL, NETBOX_TOKEN_FILE,
NETBOX_CA_FILE, NETBOX_TIMEOUT, NETBOX_ALLOW_HTTP, NETBOX_FIELD_*):
  - checks NetBox's version (>= 4.6; an older one is refused before anything else);
  - checks, without changing anything, that the token may read devices, sites, device types and custom
    fields and change devices;
  - creates, on dcim.device, the four custom fields the operator needs that do not exist yet. A field
    that exists with the right definition is left alone; one with a wrong definition is an error, and
    then nothing is created.
It prints one line per finding; exit 0 when NetBox is ready for the operator with this token, 1 (with
the reason on stderr) otherwise. Run it again at any time: it changes nothing that is right.
`

// runNetbox is `o2ims-operator netbox …`: the NetBox administration subcommands (only bootstrap).
func runNetbox(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "o2ims-operator netbox bootstrap: "+format+"\n", a...)
		return code
	}
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") ||
		len(args) == 2 && args[0] == "bootstrap" && (args[1] == "-h" || args[1] == "--help" || args[1] == "-help") {
		fmt.Fprint(stdout, netboxUsage)
		return 0
	}
	if len(args) != 1 || args[0] != "bootstrap" {
		fmt.Fprintf(stderr, "o2ims-operator netbox: want \"netbox bootstrap\" and nothing else, got %q (see netbox --help)\n", strings.Join(args, " "))
		return 2
	}
	cfg, on, err := netbox.ConfigFromEnv(getenv)
	if err != nil {
		return fail(1, "%v", err)
	}
	if !on {
		return fail(1, "%s is not set: it names the NetBox to prepare, as for the operator", netbox.EnvURL)
	}
	c, err := netbox.New(cfg, zap.NewNop(), nil)
	if err != nil {
		return fail(1, "%v", err)
	}
	rep, err := c.Schema.Bootstrap(ctx)
	printBootstrap(stdout, cfg, rep)
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintln(stdout, "NetBox is ready for the operator")
	return 0
}

// printBootstrap writes one line per finding, as far as Bootstrap got.
func printBootstrap(out io.Writer, cfg netbox.Config, rep *netbox.BootstrapReport) {
	if rep == nil || rep.Version == "" {
		return
	}
	fmt.Fprintf(out, "netbox version %s at %s\n", rep.Version, strings.TrimRight(cfg.URL, "/"))
	for _, p := range rep.Permissions {
		state := "granted"
		if !p.Granted {
			state = "MISSING"
		}
		fmt.Fprintf(out, "permission %s (%s): %s — %s\n", p.What, p.Permission, state, p.Detail)
	}
	for _, f := range rep.Fields {
		line := fmt.Sprintf("field %s (%s: %s): %s", f.Name, f.Role, f.Definition, f.Outcome)
		if f.Detail != "" {
			line += " — " + f.Detail
		}
		fmt.Fprintln(out, line)
	}
}
