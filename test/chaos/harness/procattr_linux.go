package harness

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd if the harness process dies first (a panic, a
// test -timeout, a SIGKILL), so that no broker outlives its run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
