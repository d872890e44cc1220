package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ---- CPU accounting: ours (this process and every descendant) against the whole machine ----

const clockTicks = 100 // USER_HZ on Linux

// cpuSnap is a moment's CPU counters: the machine's busy time and ours, in seconds.
type cpuSnap struct {
	at          time.Time
	machineBusy float64
	ours        float64
	pids        map[int]float64 // selected processes (API server, etcd, operators), cumulative seconds
	others      map[int]float64 // processes outside our tree, cumulative seconds
}

// cpuWindow is what happened between two snapshots.
type cpuWindow struct {
	Wall    time.Duration
	Machine float64            // core-seconds used by everything
	Ours    float64            // core-seconds used by the benchmark and its processes
	Foreign float64            // core-seconds used by other processes (the other engineer's tests)
	ByPid   map[string]float64 // core-seconds of named processes
	Top     string             // the busiest processes outside our tree
}

// ForeignCores is the average number of cores other processes used.
func (w cpuWindow) ForeignCores() float64 {
	if w.Wall <= 0 {
		return 0
	}
	return w.Foreign / w.Wall.Seconds()
}

// Cores is the average number of cores a named process used.
func (w cpuWindow) Cores(name string) float64 {
	if w.Wall <= 0 {
		return 0
	}
	return w.ByPid[name] / w.Wall.Seconds()
}

func snapshot(watch map[string]int) cpuSnap {
	s := cpuSnap{at: time.Now(), pids: map[int]float64{}, others: map[int]float64{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		var total, idle float64
		for i, v := range f[1:] {
			x, _ := strconv.ParseFloat(v, 64)
			if i >= 8 { // guest time is already in user
				break
			}
			total += x
			if i == 3 || i == 4 { // idle, iowait
				idle += x
			}
		}
		s.machineBusy = (total - idle) / clockTicks
	}
	// Our process tree: self plus every live descendant, each with its reaped children's time.
	parents := map[int]int{}
	times := map[int]float64{}
	owns := map[int]float64{} // without reaped children: to name the busy processes
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, own, reaped, ok := procTimes(pid)
		if !ok {
			continue
		}
		parents[pid] = ppid
		times[pid] = own + reaped
		owns[pid] = own
		for _, w := range watch {
			if w == pid {
				s.pids[pid] = own + reaped
			}
		}
	}
	self := os.Getpid()
	for pid, t := range times {
		mine := false
		for p := pid; p > 1; p = parents[p] {
			if p == self {
				mine = true
				break
			}
			if _, known := parents[p]; !known {
				break
			}
		}
		if mine {
			s.ours += t
		} else {
			s.others[pid] = owns[pid]
		}
	}
	return s
}

// procTimes reads a process's parent, its own CPU seconds and its reaped children's.
func procTimes(pid int) (ppid int, own, reaped float64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is the state (field 3)
	if len(f) < 15 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	num := func(j int) float64 { x, _ := strconv.ParseFloat(f[j], 64); return x / clockTicks }
	return ppid, num(11) + num(12), num(13) + num(14), true
}

// meter measures a section's CPU: start it, then end it.
type meter struct {
	watch map[string]int
	start cpuSnap
}

func startMeter(watch map[string]int) *meter {
	return &meter{watch: watch, start: snapshot(watch)}
}

func (m *meter) end() cpuWindow {
	e := snapshot(m.watch)
	w := cpuWindow{Wall: e.at.Sub(m.start.at), Machine: e.machineBusy - m.start.machineBusy, Ours: e.ours - m.start.ours,
		ByPid: map[string]float64{}}
	w.Foreign = w.Machine - w.Ours
	if w.Foreign < 0 {
		w.Foreign = 0
	}
	for name, pid := range m.watch {
		w.ByPid[name] = e.pids[pid] - m.start.pids[pid]
	}
	byName := map[string]float64{}
	for pid, t := range e.others {
		if t0, ok := m.start.others[pid]; ok {
			t -= t0
		}
		if t > 0.05 {
			byName[commOf(pid)] += t
		}
	}
	type entry struct {
		name string
		t    float64
	}
	var top []entry
	for n, t := range byName {
		top = append(top, entry{n, t})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].t > top[j].t })
	var parts []string
	for i := 0; i < len(top) && i < 3; i++ {
		parts = append(parts, fmt.Sprintf("%s %.1f s", top[i].name, top[i].t))
	}
	w.Top = strings.Join(parts, ", ")
	return w
}

func commOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return fmt.Sprintf("pid %d", pid)
	}
	return strings.TrimSpace(string(b))
}
