package partition

import (
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/raft"
)

// noteCaughtUpLocked is where the ISR's lag window comes from (DESIGN.md §3): a voter
// that holds the leader's whole log (flushed, or written under write caching) is caught
// up now; one that lags keeps the time it last was; and a new leadership gives every
// voter the full window, since the old leader's view says nothing about this one.
func TestNoteCaughtUp(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	t1 := t0.Add(5 * time.Second)
	for _, writeCaching := range []bool{false, true} {
		cfg := defaultConfig()
		cfg.WriteCaching = writeCaching
		// Every voter's broker is heard from (a host's new peers are, for a grace period).
		host := raft.NewHost(raft.HostOptions{NodeID: 1, Transport: dropSender{}, TickInterval: 10 * time.Millisecond})
		defer host.Close()
		p := &Partition{voters: []uint64{1, 2, 3}, caughtUp: map[uint64]time.Time{}, heldSeen: map[uint64]uint64{}, host: host}
		p.cfg.Store(&cfg)
		leading := Boundaries{IsLeader: true, LeaderEpoch: 4}

		// Voter 2 has written the leader's whole log but flushed only part of it; voter 3
		// lags in both.
		p.progress = map[uint64]raft.PeerProgress{1: {Match: 10, Written: 10}, 2: {Match: 8, Written: 10}, 3: {Match: 5, Written: 6}}
		p.noteCaughtUpLocked(leading, 10, t0) // the first refresh of this leadership
		for v := range uint64(3) {
			if got := p.caughtUp[v+1]; !got.Equal(t0) {
				t.Fatalf("write caching %v: voter %d caught up at %v on a new leadership, want %v", writeCaching, v+1, got, t0)
			}
		}
		p.bounds = leading
		p.noteCaughtUpLocked(leading, 10, t1)
		want := map[uint64]time.Time{1: t1, 2: t0, 3: t0}
		if writeCaching {
			want[2] = t1 // written is what counts
		}
		for v, w := range want {
			if got := p.caughtUp[v]; !got.Equal(w) {
				t.Fatalf("write caching %v: voter %d caught up at %v, want %v", writeCaching, v, got, w)
			}
		}

		// A new term clears the window's history; so does losing the leadership.
		p.noteCaughtUpLocked(Boundaries{IsLeader: true, LeaderEpoch: 5}, 10, t1.Add(time.Second))
		if got := p.caughtUp[3]; !got.Equal(t1.Add(time.Second)) {
			t.Fatalf("write caching %v: a lagging voter's time %v carried into a new term", writeCaching, got)
		}
		p.bounds = Boundaries{IsLeader: true, LeaderEpoch: 5}
		p.noteCaughtUpLocked(Boundaries{LeaderEpoch: 5}, 10, t1.Add(2*time.Second))
		if len(p.caughtUp) != 0 {
			t.Fatalf("write caching %v: a follower keeps caught-up times %v", writeCaching, p.caughtUp)
		}
	}
}
