package partition

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Follower fetching (KIP-392): with replica.selector.class the rack-aware selector, a
// leader points a consumer that sends its rack to an in-sync replica in that rack, and
// that follower serves it. A follower never serves above the visible offset its leader
// told it of (raft's Status.LeaderVisible, as refresh keeps it in MajorityReplicated):
// under strict its commit, under write caching the leader's majority-replicated offset in
// the current term, capped at its own log end; never its own log end.
//
// Whatever a follower cannot serve it answers with codes that clients already handle
// by going back to the leader, in this order:
//   - no leader known (restarting, electing): NOT_LEADER_OR_FOLLOWER;
//   - its leader's broker silent for an election timeout (cut off, so its bound may be
//     stale by more than that): the leader as PreferredReadReplica, no records;
//   - a stale or unknown leader epoch: FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH;
//   - below its log start (which may run ahead of the leader's): the leader, never
//     OFFSET_OUT_OF_RANGE, on which librdkafka would reset the consumer's offset;
//   - past its log end (it lags): OFFSET_NOT_AVAILABLE;
//   - between its bound and its log end: no records, the bound as high watermark (the
//     long poll waits for the bound to move, as on a leader).

// serveRackAware is ServeFetch while follower fetching is on: a follower's answer, or a
// leader's redirect to a replica in the consumer's rack; ok is false where the leader
// serves the fetch itself.
func (p *Partition) serveRackAware(req FetchRequest) (FetchResult, bool) {
	b := p.Boundaries()
	if !b.IsLeader {
		return p.serveFollower(req, b), true
	}
	if req.ClientRack == "" {
		return FetchResult{}, false
	}
	id := p.PreferredReplica(req.ClientRack, req.Offset)
	if id == 0 {
		return FetchResult{}, false
	}
	res := resultAt(b)
	res.PreferredReadReplica = int32(id)
	return res, true
}

// serveFollower answers a consumer's fetch on a follower, in the order above.
func (p *Partition) serveFollower(req FetchRequest, b Boundaries) FetchResult {
	res := resultAt(b)
	switch {
	case b.Leader == 0:
		res.Err = kerr.NotLeaderForPartition
		return res
	case !p.host.PeerLive(b.Leader):
		p.pointToLeader(&res, b)
		return res
	}
	if err := checkEpoch(b.LeaderEpoch, req.CurrentLeaderEpoch); err != nil {
		res.Err = err
		return res
	}
	switch {
	case req.Offset < b.LogStart:
		p.pointToLeader(&res, b)
		return res
	case req.Offset > b.LogEnd:
		res.Err = kerr.OffsetNotAvailable
		return res
	}
	if req.LastFetchedEpoch >= 0 {
		if d := p.diverging(req); d != nil {
			res.Diverging = d
			return res
		}
	}
	if req.MaxBytes <= 0 {
		return res
	}
	// Its own last stable offset bounds read_committed: never past what it applied.
	return p.readVisible(b, req.Offset, req.ReadCommitted, func(res *FetchResult, upTo int64) error {
		return p.readFiles(res, req.Offset, req.MaxBytes, upTo)
	})
}

// pointToLeader turns res into a redirect to the leader b knows, if it knows one: no
// records, no error.
func (p *Partition) pointToLeader(res *FetchResult, b Boundaries) {
	if b.Leader == 0 || b.IsLeader {
		return
	}
	*res = resultAt(b)
	res.PreferredReadReplica = int32(b.Leader)
}

// PreferredReplica is the leader's choice of a replica for a consumer in rack fetching at
// offset: a follower whose broker declared that rack, in the ISR, heard from within an
// election timeout and holding the offset (so it does not send the consumer out of range
// at once), the one holding most, the lowest id on a tie. 0 means the leader serves it:
// it is in that rack itself, does not lead, or no follower qualifies.
func (p *Partition) PreferredReplica(rack string, offset int64) uint64 {
	racks := p.Racks()
	if rack == "" || racks[p.self] == rack {
		return 0
	}
	type candidate struct{ id, held uint64 }
	var found []candidate
	p.mu.Lock()
	if p.bounds.IsLeader {
		for _, v := range p.isrLocked(p.now()) {
			if v != p.self && racks[v] == rack && p.host.PeerLive(v) {
				// Written, flushed or not: what its log holds is what it can serve.
				found = append(found, candidate{v, p.progress[v].Written})
			}
		}
	}
	p.mu.Unlock()
	slices.SortFunc(found, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.held, a.held), cmp.Compare(a.id, b.id))
	})
	for _, c := range found {
		if p.endOffset(c.held) >= offset {
			return c.id
		}
	}
	return 0
}

// diverging is the KIP-595 check of a consumer's last fetched epoch: where its log must
// be truncated to, or nil when it matches this replica's.
func (p *Partition) diverging(req FetchRequest) *EpochEnd {
	epoch, end := p.EpochEndOffset(req.LastFetchedEpoch)
	if epoch != req.LastFetchedEpoch || end < req.Offset {
		return &EpochEnd{Epoch: epoch, EndOffset: end}
	}
	return nil
}

// FollowerListOffset is ListOffset while follower fetching is on: a leader answers as
// ListOffset does; a follower answers against the bound its Fetch serves up to (latest is
// its last visible, or its last stable for read_committed; lookups stop below it), unless
// it knows no leader or has not heard from its leader's broker within an election timeout
// (NOT_LEADER_OR_FOLLOWER).
func (p *Partition) FollowerListOffset(timestamp int64, currentLeaderEpoch int32, readCommitted bool) (offset int64, ts int64, err *kerr.Error) {
	b := p.Boundaries()
	if !b.IsLeader && (b.Leader == 0 || !p.host.PeerLive(b.Leader)) {
		return -1, -1, kerr.NotLeaderForPartition
	}
	if err := checkEpoch(b.LeaderEpoch, currentLeaderEpoch); err != nil {
		return -1, -1, err
	}
	return p.listOffset(b, timestamp, readCommitted)
}
