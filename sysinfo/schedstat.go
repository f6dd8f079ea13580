package sysinfo

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// Schedstat reads a schedstat file of /proc (/proc/thread-self/schedstat,
// /proc/<pid>/task/<tid>/schedstat): the time the task ran on a CPU and
// the time it waited on a run queue, ready to run while another task held
// the CPU. ok is false where the kernel keeps no schedstat.
func Schedstat(path string) (cpu, wait time.Duration, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	f := bytes.Fields(data)
	if len(f) < 2 {
		return 0, 0, false
	}
	c, err1 := strconv.ParseInt(string(f[0]), 10, 64)
	w, err2 := strconv.ParseInt(string(f[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return time.Duration(c), time.Duration(w), true
}
