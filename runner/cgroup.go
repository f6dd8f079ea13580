package runner

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cgroups are where the process executor caps its jobs by the kernel:
// one cgroup per job, with a memory cap (which the kernel also charges
// with the files the job writes in its tmpfs work areas) and a process
// cap (threads included). They live in a folder of the runner's own,
// d5list-PID, made in the cgroup the runner was started in, which its
// host delegated to it: a cgroup v2 folder with the memory and pids
// controllers, or, on a v1 host, a folder in each of the memory and pids
// hierarchies.
type cgroups struct {
	v2 bool
	// dirs are the runner's own folders: one on v2, the memory then the
	// pids folder on v1.
	dirs []string
	// acct is the runner's own folder of v1's cpuacct hierarchy, which
	// counts a job's CPU time as v2's cpu.stat does; "" where it is not
	// mounted, or on v2.
	acct string
}

// processCgroups finds the runner's cgroups once per process: the folder
// it makes is the process's own, and on v2 the process moves itself.
var processCgroups = sync.OnceValues(findCgroups)

// JobCaps reports whether this process can cap the jobs of a process
// executor by the kernel: nil, or what its host lacks.
func JobCaps() error {
	_, err := processCgroups()
	return err
}

// CgroupSetup is the one line an operator runs to delegate a cgroup to a
// runner, for the refusal that names it and for the docs.
const CgroupSetup = "systemd-run --scope -p Delegate=yes d5list runner ..."

// findCgroups locates the runner's own cgroup in the mounted hierarchies
// and makes its folder there; the error says what the host lacks.
func findCgroups() (*cgroups, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	unified, memory, pids, cpuacct := ownCgroups(string(self), string(mounts))
	var missing []string
	if unified != "" {
		c, err := delegatedV2(unified)
		if err == nil {
			return c, nil
		}
		missing = append(missing, "cgroup v2: "+err.Error())
	}
	if memory == "" || pids == "" {
		missing = append(missing, "no cgroup v1 memory and pids hierarchies are mounted")
		return nil, errors.New(strings.Join(missing, "; "))
	}
	c := &cgroups{}
	for _, base := range []string{memory, pids} {
		dir, err := runnerFolder(base)
		if err != nil {
			return nil, errors.New(strings.Join(append(missing, "cgroup v1: "+err.Error()), "; "))
		}
		c.dirs = append(c.dirs, dir)
	}
	if cpuacct != "" {
		// Only counted, never capped: a host without it keeps its caps.
		if dir, err := runnerFolder(cpuacct); err == nil {
			c.acct = dir
		}
	}
	return c, nil
}

// ownCgroups reads the folders of the process's own cgroups from
// /proc/self/cgroup and /proc/self/mountinfo: the unified (v2) one, and
// the v1 memory, pids and cpuacct ones; "" where that hierarchy is not
// mounted where the process can see its cgroup.
func ownCgroups(self, mountinfo string) (unified, memory, pids, cpuacct string) {
	type mount struct{ root, point string }
	var v2 *mount
	v1 := map[string]mount{}
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 5 || len(f) < sep+4 {
			continue
		}
		m := mount{root: f[3], point: f[4]}
		switch f[sep+1] {
		case "cgroup2":
			if v2 == nil {
				v2 = &m
			}
		case "cgroup":
			for _, opt := range strings.Split(f[sep+3], ",") {
				if _, seen := v1[opt]; !seen {
					v1[opt] = m
				}
			}
		}
	}
	// where is the folder of cgroup p in mount m: p is relative to the
	// root of the hierarchy, and m may show a part of it only.
	where := func(m mount, p string) string {
		rel := p
		if m.root != "/" {
			if p != m.root && !strings.HasPrefix(p, m.root+"/") {
				return ""
			}
			rel = strings.TrimPrefix(p, m.root)
		}
		return filepath.Join(m.point, filepath.FromSlash(path.Clean("/"+rel)))
	}
	for _, line := range strings.Split(self, "\n") {
		id, rest, ok := strings.Cut(line, ":")
		controllers, p, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 {
			continue
		}
		if id == "0" && controllers == "" {
			if v2 != nil {
				unified = where(*v2, p)
			}
			continue
		}
		for _, c := range strings.Split(controllers, ",") {
			m, mounted := v1[c]
			switch {
			case !mounted:
			case c == "memory":
				memory = where(m, p)
			case c == "pids":
				pids = where(m, p)
			case c == "cpuacct":
				cpuacct = where(m, p)
			}
		}
	}
	return unified, memory, pids, cpuacct
}

// delegatedV2 readies own, the runner's cgroup v2, to hold one cgroup per
// job: it needs the memory and pids controllers there, and, since a v2
// cgroup that hands controllers to its children may hold no process
// itself, every process in own moves to a leaf, d5list-runner: the
// runner, and whatever started it in the cgroup delegated to it (a
// wrapper script, `go test`).
func delegatedV2(own string) (*cgroups, error) {
	b, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	have := strings.Fields(string(b))
	if !slices.Contains(have, "memory") || !slices.Contains(have, "pids") {
		return nil, fmt.Errorf("%s has the controllers %q; the memory and pids controllers must be delegated to it", own, have)
	}
	leaf := filepath.Join(own, "d5list-runner")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if err := writeCgroup(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
		return nil, err
	}
	for _, pid := range cgroupProcs(own) {
		_ = writeCgroup(leaf, "cgroup.procs", strconv.Itoa(pid)) // one may have ended
	}
	dir, err := runnerFolder(own)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{own, dir} {
		if err := writeCgroup(d, "cgroup.subtree_control", "+memory +pids"); err != nil {
			if errors.Is(err, syscall.EBUSY) {
				return nil, fmt.Errorf("%s holds processes other than the runner: start the runner alone in the cgroup delegated to it", own)
			}
			return nil, err
		}
	}
	return &cgroups{v2: true, dirs: []string{dir}}, nil
}

// runnerFolder makes base/d5list-PID, the folder of this runner's jobs,
// after removing the empty folders of runners that have died (their jobs'
// processes died with them: bwrap --die-with-parent).
func runnerFolder(base string) (string, error) {
	olds, _ := filepath.Glob(filepath.Join(base, "d5list-*"))
	for _, old := range olds {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(old), "d5list-"))
		if err == nil && pid != os.Getpid() && !processAlive(pid) {
			pruneCgroups(old)
		}
	}
	dir := filepath.Join(base, "d5list-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return dir, nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// jobCgroup is one job's cgroup: one folder on v2, one per hierarchy on
// v1 (memory, then pids). A nil *jobCgroup is a job without caps.
type jobCgroup struct {
	v2        bool
	dirs      []string
	acct      string // v1's cpuacct folder, "" without one
	memory    int64  // the caps, for messages; negative: none
	processes int64
	// home are the runner's own folders of dirs' and acct's hierarchies,
	// in the same order (v1): a thread that went into the job's cgroup to
	// start a run there comes back to them (admission.go).
	home []string
}

// job makes the cgroup of one job (name: unique among the runner's) with
// its caps: memory (swap included, so that the cap is not merely moved to
// the disk) and processes. A negative cap leaves its controller unlimited.
func (c *cgroups) job(name string, memory, processes int64) (*jobCgroup, error) {
	j := &jobCgroup{v2: c.v2, memory: memory, processes: processes}
	for _, d := range c.dirs {
		if err := os.Mkdir(filepath.Join(d, name), 0o755); err != nil {
			j.remove()
			return nil, err
		}
		j.dirs = append(j.dirs, filepath.Join(d, name))
	}
	if c.acct != "" && os.Mkdir(filepath.Join(c.acct, name), 0o755) == nil {
		j.acct = filepath.Join(c.acct, name)
	}
	if !c.v2 {
		// The runner's folder, d5list-PID, is in the runner's own cgroup.
		for _, d := range c.dirs {
			j.home = append(j.home, filepath.Dir(d))
		}
		if j.acct != "" {
			j.home = append(j.home, filepath.Dir(c.acct))
		}
	}
	type setting struct {
		dir, file, value string
		optional         bool // absent where the kernel lacks it (no swap accounting, an old kernel)
	}
	mem, pids := j.dirs[0], j.dirs[len(j.dirs)-1]
	var set []setting
	if memory >= 0 {
		v := strconv.FormatInt(memory, 10)
		if c.v2 {
			set = append(set, setting{mem, "memory.max", v, false}, setting{mem, "memory.swap.max", "0", true},
				// An out-of-memory kill ends the whole job, not one of its
				// processes chosen by size.
				setting{mem, "memory.oom.group", "1", true})
		} else {
			set = append(set, setting{mem, "memory.limit_in_bytes", v, false}, setting{mem, "memory.memsw.limit_in_bytes", v, true})
		}
	}
	if processes >= 0 {
		set = append(set, setting{pids, "pids.max", strconv.FormatInt(processes, 10), false})
	}
	for _, s := range set {
		if err := writeCgroup(s.dir, s.file, s.value); err != nil && !(s.optional && errors.Is(err, os.ErrNotExist)) {
			j.remove()
			return nil, err
		}
	}
	return j, nil
}

// admit moves process pid into the job's cgroup, in every hierarchy.
func (j *jobCgroup) admit(pid int) error {
	for _, d := range j.joinedDirs() {
		if err := writeCgroup(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// capsMet counts the times the job met its caps: processes the kernel
// killed at the memory cap, and forks it refused at the process cap.
type capsMet struct{ oomKills, forksRefused int64 }

func (j *jobCgroup) met() capsMet {
	oom := "memory.oom_control"
	if j.v2 {
		oom = "memory.events"
	}
	return capsMet{
		oomKills:     cgroupCount(filepath.Join(j.dirs[0], oom), "oom_kill"),
		forksRefused: cgroupCount(filepath.Join(j.dirs[len(j.dirs)-1], "pids.events"), "max"),
	}
}

// cpuUsage is the CPU time the job's processes have spent, every one
// that ever ran in the cgroup (v2's cpu.stat, kept without the cpu
// controller; v1's cpuacct.usage); false without either.
func (j *jobCgroup) cpuUsage() (time.Duration, bool) {
	switch {
	case j == nil:
		return 0, false
	case j.v2:
		file := filepath.Join(j.dirs[0], "cpu.stat")
		if _, err := os.Stat(file); err != nil {
			return 0, false
		}
		return time.Duration(cgroupCount(file, "usage_usec")) * time.Microsecond, true
	case j.acct != "":
		b, err := os.ReadFile(filepath.Join(j.acct, "cpuacct.usage"))
		if err != nil {
			return 0, false
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(ns), err == nil
	}
	return 0, false
}

// remove kills whatever is left of the job and removes its cgroup.
func (j *jobCgroup) remove() {
	if j == nil {
		return
	}
	for _, d := range j.dirs {
		_ = removeCgroup(d)
	}
	if j.acct != "" {
		_ = removeCgroup(j.acct)
	}
}

// removeCgroup removes a job's cgroup, killing what is still in it: after
// a run the sandbox's processes die with its PID namespace, but they may
// take a moment to leave.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		for _, pid := range cgroupProcs(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pruneCgroups removes dir and the cgroups below it that hold no process.
func pruneCgroups(dir string) {
	subs, _ := os.ReadDir(dir)
	for _, s := range subs {
		if s.IsDir() {
			pruneCgroups(filepath.Join(dir, s.Name()))
		}
	}
	_ = syscall.Rmdir(dir)
}

// cgroupProcs lists the processes in a cgroup.
func cgroupProcs(dir string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// writeCgroup writes one value to a cgroup's control file.
func writeCgroup(dir, file, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, filepath.Join(dir, file), err)
	}
	return nil
}

// cgroupCount reads the count of key in a "key value" lines file
// (memory.events, memory.oom_control, pids.events); 0 where it is absent.
func cgroupCount(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// mebibytes writes a byte count for a person.
func mebibytes(n int64) string {
	return strconv.FormatInt(n>>20, 10) + " MiB"
}
