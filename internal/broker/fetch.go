package broker

import (
	"github.com/cairn-io/cairn/internal/partition"
)

// Fetch serves one partition of a consumer's Fetch from the local replica, as Produce
// routes a produce: the Kafka layer names the partition, never the replica. A partition
// without a replica here answers as Partition does, with no boundaries (-1).
func (b *Broker) Fetch(topic string, part int32, req partition.FetchRequest) partition.FetchResult {
	p, err := b.Partition(topic, part)
	if err != nil {
		return partition.FetchResult{HighWatermark: -1, LogStart: -1, Err: err}
	}
	return p.ServeFetch(req)
}

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
