package app

import (
	"runtime/debug"
	"strconv"
	"strings"
)

// memLimitShare is the part of the container's memory limit the Go runtime aims to stay under: the
// rest is headroom for what it does not count (the binary's text, kernel buffers) before the kernel's
// OOM kill.
const memLimitShare = 0.9

// cgroupMemoryFiles hold the container's memory limit: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// applyMemoryLimit sets the Go runtime's soft memory limit to memLimitShare of the container's memory
// limit, unless GOMEMLIMIT is set (the runtime has applied it already) or there is no limit. Without it
// the collector lets the heap grow to twice what is live (GOGC 100) whatever the limit, so a burst of
// list pages can take a pod with a tight limit into an OOM kill; with it, the collector works harder as
// the limit nears instead. It returns the limit set (0: none).
func applyMemoryLimit(getenv func(string) string, readFile func(string) ([]byte, error)) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	for _, f := range cgroupMemoryFiles {
		raw, err := readFile(f)
		if err != nil {
			continue
		}
		limit, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		// "max" (v2) or a huge page-rounded number (v1: 9223372036854771712) mean no limit.
		if err != nil || limit <= 0 || limit >= 1<<62 {
			return 0
		}
		soft := int64(float64(limit) * memLimitShare)
		debug.SetMemoryLimit(soft)
		return soft
	}
	return 0
}
