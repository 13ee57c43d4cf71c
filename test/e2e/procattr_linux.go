package e2e

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill cmd if the test process dies first (a panic on
// -timeout, say), so that no broker outlives its test run.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
