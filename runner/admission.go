package runner

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
)

// A run's processes must be in its job's cgroup from their first
// instruction: nothing of a run, not even bwrap's first fork, runs
// uncapped. There are two ways to get there.
//
// Born inside (cgroup v1): a thread of the runner, locked to its
// goroutine, moves itself into the job's cgroup, forks the run, and moves
// back. The kernel puts a new process in the cgroups of the thread that
// forked it. A thread that moves itself ("0" written to a hierarchy's
// tasks) takes tens of microseconds; moving another process (its pid
// written to cgroup.procs) waits for an RCU grace period, 8 to 24 ms a run
// measured on the development VM, on the start of every run.
//
// Held (cgroup v2, where a thread cannot leave its process's cgroup): the
// run starts as admitScript, which waits on its stdin; the runner moves it
// into the job's cgroup by its pid, then lets it go.

// admitScript holds a run at its start until the runner has put it into
// its job's cgroup and says "go" on its stdin: it runs its arguments
// (bwrap, prlimit) only then. A runner that dies first closes the pipe,
// and the run never starts.
const admitScript = `read -r word && [ "$word" = go ] && exec "$@" </dev/null; exit 125`

// admission is how one run gets into its job's cgroup, and what it met
// there.
type admission struct {
	job    *jobCgroup
	held   bool           // started as admitScript, moved in by its pid
	word   io.WriteCloser // held: the run's stdin, where "go" lets it start
	err    error          // why the run was not let in
	before capsMet        // the job's count when the run started
}

// hold makes the command of a run of the job and its admission, which
// starts it (start); without a job cgroup, the plain command and a nil
// admission.
func (j *jobCgroup) hold(argv []string) (*exec.Cmd, *admission) {
	if j == nil {
		return exec.Command(argv[0], argv[1:]...), nil
	}
	a := &admission{job: j}
	if j.bornInside() {
		return exec.Command(argv[0], argv[1:]...), a
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", admitScript, "d5list-admit"}, argv...)...)
	a.held = true
	a.word, a.err = cmd.StdinPipe()
	return cmd, a
}

// bornInside reports whether the job's runs are forked inside its cgroup
// (v1, with the runner's own folders to come back to), not held and moved
// in.
func (j *jobCgroup) bornInside() bool {
	return !j.v2 && j.home != nil
}

// joinedDirs are the job's folders a run joins, one per hierarchy.
func (j *jobCgroup) joinedDirs() []string {
	if j.acct == "" {
		return j.dirs
	}
	return append(slices.Clone(j.dirs), j.acct)
}

// start starts cmd, made by hold, in the job's cgroup, and returns an
// error from starting the command. One from putting it in the cgroup is
// kept for verdict, which names it: the run's command never runs (start
// returns errNotAdmitted, or, for a held run already started, nil: its
// shim exits without running it).
func (a *admission) start(cmd *exec.Cmd) error {
	if a == nil {
		return cmd.Start()
	}
	a.before = a.job.met()
	if !a.held {
		return a.startInside(cmd)
	}
	if a.err != nil {
		return errNotAdmitted
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer a.word.Close()
	if a.err = a.job.admit(cmd.Process.Pid); a.err != nil {
		return nil
	}
	_, a.err = io.WriteString(a.word, "go\n")
	return nil
}

// startInside forks cmd from a thread in the job's cgroup. The thread
// must outlive the run: bwrap's --die-with-parent follows the thread that
// forked it (PR_SET_PDEATHSIG), so, back home, the thread returns to the
// Go runtime's pool, which ends no thread that is not locked; no goroutine
// of the runner may end locked to its thread. One that could not come back
// stays locked and ends with its goroutine, once the run it started has
// been killed: no other work of the runner runs in a job's cgroup.
func (a *admission) startInside(cmd *exec.Cmd) error {
	type started struct{ err, admitErr error }
	done := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		if err := enterCgroups(a.job.joinedDirs()); err != nil {
			back := enterCgroups(a.job.home)
			if back == nil {
				runtime.UnlockOSThread()
			}
			done <- started{admitErr: errors.Join(err, back)}
			return
		}
		err := cmd.Start()
		if back := enterCgroups(a.job.home); back != nil {
			if err == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				err = fmt.Errorf("the runner's thread could not leave the job's cgroup: %w", back)
			}
			done <- started{err: err}
			return
		}
		runtime.UnlockOSThread()
		done <- started{err: err}
	}()
	s := <-done
	if s.admitErr != nil {
		// As a held run that could not be let in: its command never ran.
		a.err = s.admitErr
		return errNotAdmitted
	}
	return s.err
}

// errNotAdmitted is start's error for a run its cgroup would not take:
// verdict names the cause.
var errNotAdmitted = errors.New("not started: the job's cgroup would not take it")

// enterCgroups moves the calling thread, and only it, into the folders,
// one per hierarchy.
func enterCgroups(dirs []string) error {
	for _, d := range dirs {
		if err := writeCgroup(d, "tasks", "0"); err != nil {
			return err
		}
	}
	return nil
}

// verdict is the run's error (nil if it succeeded) told with the caps: a
// run not let into its cgroup failed for that, and a run that met a cap
// (the kernel killed a process at the memory cap, or refused a fork at
// the process cap) failed for it, whatever its exit status: it did not
// run as it meant to, and its operator learns which cap to raise.
func (a *admission) verdict(err error) error {
	if a == nil {
		return err
	}
	if a.err != nil {
		return fmt.Errorf("the run could not be put in its job's cgroup: %w", a.err)
	}
	now := a.job.met()
	var met string
	switch {
	case now.oomKills > a.before.oomKills:
		met = "the job reached its memory cap of " + mebibytes(a.job.memory) + " (files in its work areas count), and the kernel killed its processes"
	case now.forksRefused > a.before.forksRefused:
		met = fmt.Sprintf("the job reached its cap of %d processes and threads, and the kernel refused it more", a.job.processes)
	default:
		return err
	}
	return &capError{met: met, err: err}
}

// capError is a run that met one of its job's caps; err is how the run
// ended (nil if it exited 0).
type capError struct {
	met string
	err error
}

func (e *capError) Error() string {
	if e.err == nil {
		return e.met
	}
	return e.met + ": " + e.err.Error()
}

func (e *capError) Unwrap() error { return e.err }
