//go:build !linux

package harness

import "time"

// waitStopped cannot see thread states without /proc: Pause returns once the signal is sent.
func waitStopped(int, time.Duration) error { return nil }

func runningThreads(int) (int, error) { return 0, nil }
