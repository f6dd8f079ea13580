package sysinfo

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ForeignDelayShare is the share of span that other work on the machine
// delayed a run's processes by. They wait for a CPU (wait, per process
// that computes, since processes that compute in lockstep are delayed
// once by concurrent waits) behind each other or behind foreign tasks;
// the wait is attributed to foreign work in proportion to the CPU time
// foreign tasks took during the span: the machine's busy time (busy) less
// the run's own CPU time (own). On a quiet machine it is about 0, whatever
// the run waits for itself.
func ForeignDelayShare(span, busy, own, wait time.Duration) float64 {
	if span <= 0 {
		return 0
	}
	foreign := max(0, busy-own)
	if foreign+own <= 0 {
		return 0
	}
	share := float64(wait) * float64(foreign) / float64(foreign+own) / float64(span)
	return math.Min(math.Max(share, 0), 1)
}

// ProcessSchedstat sums /proc/pid/task/*/schedstat: nanoseconds on a CPU
// and waiting on a run queue, over every thread of process pid.
func ProcessSchedstat(pid int) (cpu, wait time.Duration, ok bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		return 0, 0, false
	}
	for _, path := range tasks {
		c, w, ok := Schedstat(path)
		if !ok {
			continue // a thread that ended between the listing and the read
		}
		cpu += c
		wait += w
	}
	return cpu, wait, true
}

// ProcessStat is the CPU time process pid has spent, user and system, its
// ended threads included, and when it started, in clock ticks after boot:
// /proc/pid/stat's utime, stime and starttime. The kernel keeps the times
// for the whole thread group; a sum over the live threads' schedstat loses
// a thread's time when it ends, and a worker whose collectives ran on
// threads it ended (gloo's, at destroy_process_group) would look as if it
// had hardly computed. The start tells two processes apart that were given
// the same PID one after the other.
func ProcessStat(pid int) (cpu time.Duration, started uint64, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	return procStat(data)
}

// procStat reads utime, stime and starttime from a /proc/pid/stat line.
// The command name in parentheses may hold spaces and parentheses of its
// own, so the fields are counted from the last ')'.
func procStat(line []byte) (time.Duration, uint64, bool) {
	i := bytes.LastIndexByte(line, ')')
	if i < 0 {
		return 0, 0, false
	}
	// After the name: state (field 3), ..., utime (14), stime (15), ...,
	// starttime (22).
	f := bytes.Fields(line[i+1:])
	if len(f) < 20 {
		return 0, 0, false
	}
	var ticks int64
	for _, field := range f[11:13] {
		v, err := strconv.ParseInt(string(field), 10, 64)
		if err != nil || v < 0 {
			return 0, 0, false
		}
		ticks += v
	}
	started, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return time.Duration(ticks) * time.Second / clockTicks, started, true
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux
// architecture Go supports (the kernel's ABI fixes it).
const clockTicks = 100

// MachineBusy is the CPU time the machine has spent on anything but idling
// since boot, summed over its CPUs: the aggregate "cpu" line of /proc/stat
// less idle and iowait. Steal counts as busy: a hypervisor that ran another
// guest delayed the run as any foreign task would.
func MachineBusy() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, false
	}
	var busy int64
	for i, field := range f[1:] {
		if i >= 8 { // guest time is already in user and nice
			break
		}
		v, err := strconv.ParseInt(string(field), 10, 64)
		if err != nil {
			return 0, false
		}
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		busy += v
	}
	return time.Duration(busy) * time.Second / clockTicks, true
}
