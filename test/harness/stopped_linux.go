package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// waitStopped waits until every thread of pid is stopped. kill(SIGSTOP) returns once the
// signal is pending, and the kernel wakes only one thread to act on it; the others keep
// running until that thread is scheduled and stops the group. On a loaded machine that
// takes milliseconds, in which a "paused" broker still reads its sockets, fsyncs and
// answers: a test that pauses a replica and then writes would see that replica hold the
// write. So Pause returns only once /proc shows every thread in the stopped state.
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		running, err := runningThreads(pid)
		if err != nil {
			return err
		}
		if running == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d: %d threads still run %v after SIGSTOP", pid, running, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// runningThreads counts pid's threads whose state in /proc is not stopped (T) or traced (t).
func runningThreads(pid int) (int, error) {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return 0, fmt.Errorf("pid %d: no threads in /proc (%v)", pid, err)
	}
	n := 0
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses and may hold any byte.
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			return 0, fmt.Errorf("pid %d: unreadable %s", pid, path)
		}
		if state := s[i+2]; state != 'T' && state != 't' {
			n++
		}
	}
	return n, nil
}
