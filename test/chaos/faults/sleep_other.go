//go:build !linux

package faults

import "time"

// sleepPrecisely is time.Sleep where no finer sleep is at hand.
func sleepPrecisely(d time.Duration) { time.Sleep(d) }
