package faults

import (
	"syscall"
	"time"
)

// sleepPrecisely blocks the calling thread in nanosleep: the runtime's timers wake a
// sleeping goroutine only to the millisecond when the process is idle, which would turn a
// 0.2 ms link into a 1 ms one. A relay writer holds its thread while it waits; there are a
// few such writers per broker pair.
func sleepPrecisely(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
