// o2ims-operator fulfils O-RAN O2IMS ProvisioningRequests for Nephio: a drop-in replacement for Nephio's
// Python (kopf) O2IMS operator image, with an embedded O2IMS northbound API and an optional NetBox
// inventory that claims bare-metal hosts and registers them with Metal3.
//
// This file is the front door only: the process — its command line, environment and the wiring of every
// part — is internal/app.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/o2ims-operator/o2ims-operator/internal/app"
)

// version is set at build time (-ldflags -X main.version=...).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(app.Main(ctx, app.Process{Args: os.Args, Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr, Version: version}))
}
