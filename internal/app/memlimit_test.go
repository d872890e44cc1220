package app

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMemoryLimitFollowsTheContainersLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		}
	}
	noEnv := func(string) string { return "" }
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"

	assert.Equal(t, int64(241591910), applyMemoryLimit(noEnv, files(map[string]string{v2: "268435456\n"})), "90% of 256Mi (cgroup v2)")
	assert.Equal(t, int64(241591910), debug.SetMemoryLimit(-1), "and the runtime has it")
	assert.Equal(t, int64(483183820), applyMemoryLimit(noEnv, files(map[string]string{v1: "536870912\n"})), "cgroup v1")

	debug.SetMemoryLimit(prev)
	for name, m := range map[string]map[string]string{
		"no limit (v2)":     {v2: "max\n"},
		"no limit (v1)":     {v1: "9223372036854771712\n"},
		"no cgroup files":   {},
		"unreadable number": {v2: "lots"},
	} {
		assert.Zero(t, applyMemoryLimit(noEnv, files(m)), name)
		assert.Equal(t, prev, debug.SetMemoryLimit(-1), "%s: the runtime's limit is left alone", name)
	}
	withEnv := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "100MiB"
		}
		return ""
	}
	assert.Zero(t, applyMemoryLimit(withEnv, files(map[string]string{v2: "268435456"})), "GOMEMLIMIT wins")
	assert.Equal(t, prev, debug.SetMemoryLimit(-1))
}
