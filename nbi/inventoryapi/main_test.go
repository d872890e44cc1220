package inventoryapi

import (
	"flag"
	"os"
	"testing"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func TestMain(m *testing.M) {
	// Tests share one real API server. A fuzzing worker process runs only its fuzz target, which needs
	// none, so it does not start one per worker.
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	os.Exit(kubeapi.RunMain(m, kubeapi.DefaultCRDs))
}
