package harness

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill cmd if the process that started it dies first (a
// panic, a test -timeout, a SIGKILL), so that no broker or client outlives its run.
func DieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
