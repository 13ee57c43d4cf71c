//go:build !linux

package harness

import "os/exec"

// DieWithParent is a no-op where the kernel has no parent-death signal: the suite must stop
// what it started.
func DieWithParent(*exec.Cmd) {}
