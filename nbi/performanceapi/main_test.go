package performanceapi

import (
	"os"
	"testing"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func TestMain(m *testing.M) {
	// Tests share one real API server (the jobs' ConfigMap).
	os.Exit(kubeapi.RunMain(m, kubeapi.DefaultCRDs))
}
