package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/partition"
)

// Fetch serves one partition of a consumer's Fetch from the local replica, as Produce
// routes a produce: the Kafka layer names the partition, never the replica. A partition
// without a replica here answers as Partition does, with no boundaries (-1).
//
// A follower read (KIP-392) that this broker cannot serve at all, because it holds no
// replica (removed, or not yet opened) or its replica knows no leader (restarting,
// campaigning), is pointed to the leader this broker knows from its peers' lists, so that
// the consumer goes back to the leader rather than waiting here for metadata to change.
func (b *Broker) Fetch(topic string, part int32, req partition.FetchRequest) partition.FetchResult {
	var res partition.FetchResult
	if p, err := b.Partition(topic, part); err != nil {
		res = partition.FetchResult{HighWatermark: -1, LastStable: -1, LogStart: -1, Err: err}
	} else {
		res = p.ServeFetch(req)
	}
	if res.Err == kerr.NotLeaderForPartition && (req.FollowerRead || req.ClientRack != "") {
		if t, ok := b.topic(topic); ok {
			if v := b.PartitionView(*t, part); v.Leader > 0 && v.Leader != b.cfg.NodeID {
				res = partition.FetchResult{HighWatermark: res.HighWatermark, LastStable: res.LastStable, LogStart: res.LogStart, PreferredReadReplica: v.Leader}
			}
		}
	}
	return res
}

// FollowerFetching reports whether replica.selector.class is the rack-aware selector, so
// that followers serve consumers and leaders point consumers to their rack (KIP-392).
func (b *Broker) FollowerFetching() bool { return b.followerFetching.Load() }

// WatchPartition registers ch to receive a non-blocking signal whenever a boundary of
// the local replica of the partition moves (see partition.Partition.Watch), for Fetch's long poll.
// It returns the function that unregisters ch, or nil when the partition has no replica
// here. The replica is the one watched even if it is later replaced, so the watch is
// always removed from where it was added.
func (b *Broker) WatchPartition(topic string, part int32, ch chan struct{}) (unwatch func()) {
	p, err := b.Partition(topic, part)
	if err != nil {
		return nil
	}
	p.Watch(ch)
	return func() { p.Unwatch(ch) }
}
