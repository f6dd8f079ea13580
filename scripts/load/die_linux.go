package main

import (
	"os/exec"
	"syscall"
)

// dieWithThisProcess has the kernel kill cmd when this process ends: a
// log.Fatal skips the deferred stops, and a server or runner left behind
// holds the terminal's pipe open (a `| tee` of the output never ends).
func dieWithThisProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
