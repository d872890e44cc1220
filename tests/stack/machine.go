package stack

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where a measurement was taken, for the reports of make bench and make chaos.
type Machine struct {
	CPU, Memory, Kernel, Go string
	Cores                   int
}

// DescribeMachine reads this machine's CPU model, memory and kernel from /proc, and the Go toolchain.
func DescribeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseUint(strings.Fields(procField("/proc/meminfo", "MemTotal") + " 0")[0], 10, 64); err == nil && kb > 0 {
		m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(strings.TrimPrefix(string(out), "go version "))
	}
	return m
}

// String is the machine on one line.
func (m Machine) String() string {
	parts := []string{"Linux " + m.Kernel}
	if m.CPU != "" {
		parts = append(parts, m.CPU)
	}
	parts = append(parts, fmt.Sprintf("%d CPUs", m.Cores))
	if m.Memory != "" {
		parts = append(parts, m.Memory+" RAM")
	}
	return strings.Join(append(parts, m.Go), ", ")
}

// procField reads "key : value" (cpuinfo) or "key: value" (meminfo) from a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Tail is the last n lines of a file ("" when it cannot be read): a log's end for a failure message.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
