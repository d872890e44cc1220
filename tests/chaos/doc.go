// Package chaos runs the operator binary through SIGKILLs, a kube-apiserver restart and NetBox faults
// (5xx answers, timeouts, PATCH answers lost after the commit) while requests are claimed, provisioned
// and released, then checks that nothing leaked and nothing was claimed twice or written twice.
//
//	go test -count=1 -run . ./tests/chaos/                    # builds the binary from this checkout
//	make chaos                                                # the binary from make build, writes docs/chaos.md
//	go test -count=1 -run . ./tests/chaos/ -args -seed=N      # repeat a run's random choices
//
// Flags (after -args): -operator=<binary>, -seed=N, -report=<path of a Markdown report>.
package chaos
