package storage

import (
	"sync"
	"sync/atomic"
)

// Holding fsyncs: the gate `cairn lab` uses to stop a write between "written" and
// "fsynced". While held, every File.Sync and SyncDir of the PowerLossFS waits before it
// makes anything durable, so the broker keeps receiving and writing (its log end and the
// majority-replicated boundary move) while its flushed boundary, and whatever Raft must
// fsync first (its votes and term), stand still. A power cut then loses exactly what was
// written since the hold, which is what the lab shows. Released, the waiting syncs go on.
// A held broker does not stop gracefully until released; the lab kills it instead.

type syncHold struct {
	mu      sync.Mutex
	gate    chan struct{} // nil: not held; closed on release
	waiting atomic.Int64
}

func (h *syncHold) wait() {
	h.mu.Lock()
	g := h.gate
	h.mu.Unlock()
	if g == nil {
		return
	}
	h.waiting.Add(1)
	<-g
	h.waiting.Add(-1)
}

// HoldSyncs makes every later fsync wait until ReleaseSyncs.
func (pl *PowerLossFS) HoldSyncs() {
	pl.hold.mu.Lock()
	if pl.hold.gate == nil {
		pl.hold.gate = make(chan struct{})
	}
	pl.hold.mu.Unlock()
}

// ReleaseSyncs lets the held fsyncs, and every later one, go on.
func (pl *PowerLossFS) ReleaseSyncs() {
	pl.hold.mu.Lock()
	if pl.hold.gate != nil {
		close(pl.hold.gate)
		pl.hold.gate = nil
	}
	pl.hold.mu.Unlock()
}

// SyncsHeld reports whether fsyncs are held, and how many wait.
func (pl *PowerLossFS) SyncsHeld() (held bool, waiting int64) {
	pl.hold.mu.Lock()
	held = pl.hold.gate != nil
	pl.hold.mu.Unlock()
	return held, pl.hold.waiting.Load()
}
