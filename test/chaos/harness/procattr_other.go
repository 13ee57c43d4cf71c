//go:build !linux

package harness

import "os/exec"

// dieWithParent is a no-op where the kernel has no parent-death signal: Close must run.
func dieWithParent(*exec.Cmd) {}
