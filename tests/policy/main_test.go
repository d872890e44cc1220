// Package policy holds the tests that read the repository as a whole rather than one package: the
// dependency arrows of docs/architecture.md (arch_test.go), what a clone gets (repo_test.go) and the size
// of functions (size_test.go), of files and of types (bulk_test.go). Each reads paths relative to the
// repository root, so the tests run there.
package policy

import (
	"fmt"
	"os"
	"testing"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func TestMain(m *testing.M) {
	root, err := kubeapi.RepoRoot()
	if err == nil {
		err = os.Chdir(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests/policy:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
