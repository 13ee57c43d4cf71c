package txn

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Writing the markers of a prepared transaction. One goroutine per transaction writes its
// markers to all of its partitions at once, each retried until it is acknowledged, then
// persists the Complete transition. It stops when this node stops leading the shard: the
// next leader replays the Prepare record and starts again. A marker written twice that way
// is harmless: a partition makes a repeated marker of the same producer, epoch and outcome
// a no-op.
//
// A marker that arrives late must not end the producer's next transaction, which under
// transaction.version 0 has the same producer epoch (only KIP-890 part 2's bump per
// transaction would tell them apart on the partition). It cannot, for these reasons:
//   - this coordinator sends a marker's attempts one after another, each only once the one
//     before was answered or timed out (markerTimeout), and the inter-broker link delivers
//     a connection's messages in order, so no attempt overtakes a later one;
//   - the next transaction starts only after every marker of this one was acknowledged,
//     that is after the last attempt arrived;
//   - a coordinator that lost the shard stops sending, and what it sent before carries an
//     older coordinator epoch than its successor's markers, which the partition refuses
//     (TRANSACTION_COORDINATOR_FENCED) once one of the successor's markers landed.
//
// What is left is a message of a broken connection read after the next connection's,
// within the milliseconds a reconnect takes, against the seconds of a timeout plus a
// whole client round trip: accepted, and gone with transaction.version 2.

// markerTimeout bounds one attempt at one marker.
const markerTimeout = 10 * time.Second

// startMarkersLocked starts writing the markers of a prepared transaction, unless a
// writer for it runs already.
func (c *Coordinator) startMarkersLocked(sh *shard, id string) {
	if sh.writing[id] {
		return
	}
	sh.writing[id] = true
	c.wg.Add(1)
	go c.writeMarkers(sh, id)
}

func (c *Coordinator) writeMarkers(sh *shard, id string) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		delete(sh.writing, id)
		c.mu.Unlock()
	}()
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		if !c.currentLocked(sh) {
			c.mu.Unlock()
			return
		}
		md, ok := sh.m.Get(id)
		epoch := sh.epoch
		c.mu.Unlock()
		if !ok || (md.State != PrepareCommit && md.State != PrepareAbort) {
			return
		}
		if !c.markAll(sh, md, epoch) {
			return
		}
		c.mu.Lock()
		var t *Transition
		if c.currentLocked(sh) {
			t = sh.m.MarkersWritten(id, c.now())
		}
		c.mu.Unlock()
		if t == nil {
			return
		}
		if err := c.persist(sh, t); err == nil {
			return
		}
		if !c.sleep(backoff(attempt)) {
			return
		}
	}
}

// markAll writes md's marker on each of its partitions; false when the shard was lost or
// the coordinator closed before every marker was acknowledged.
func (c *Coordinator) markAll(sh *shard, md Metadata, epoch int32) bool {
	var wg sync.WaitGroup
	var lost atomic.Bool
	for _, tp := range md.Partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := Marker{Topic: tp.Topic, Partition: tp.Partition, ProducerID: md.ProducerID, ProducerEpoch: md.ProducerEpoch,
				Commit: md.State == PrepareCommit, CoordinatorEpoch: epoch}
			if !c.mark(sh, m) {
				lost.Store(true)
			}
		}()
	}
	wg.Wait()
	return !lost.Load()
}

// markerGiveUp is how long a partition must stay unknown before its marker is dropped as
// that of a deleted topic. A broker that just restarted answers UNKNOWN_TOPIC_OR_PARTITION
// for a few seconds, until its copy of the cluster's metadata catches up; taking that for
// a deletion skipped a commit marker (found by the txn chaos session) and broke the
// transaction's atomicity.
const markerGiveUp = 30 * time.Second

// mark writes one marker until it is acknowledged (true), or the shard is lost (false).
func (c *Coordinator) mark(sh *shard, m Marker) bool {
	var unknownSince time.Time
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		serving := c.currentLocked(sh)
		c.mu.Unlock()
		if !serving {
			return false
		}
		ctx, cancel := context.WithTimeout(c.ctx, markerTimeout)
		err, msg := c.host.WriteMarker(ctx, m)
		cancel()
		switch err {
		case nil:
			c.markersWritten.Add(1)
			return true
		case kerr.UnknownTopicOrPartition:
			if unknownSince.IsZero() {
				unknownSince = c.now()
			}
			if c.now().Sub(unknownSince) >= markerGiveUp {
				// The topic was deleted: there is nothing left to mark (Kafka drops it too).
				c.lg.Info("a transaction's partition is gone; no marker written", "topic", m.Topic, "partition", m.Partition)
				return true
			}
		case kerr.InvalidProducerEpoch:
			// The partition already holds a later epoch of this producer, which only a
			// later marker of this coordinator could have written: this transaction is
			// over there.
			c.lg.Warn("a marker's epoch is older than the partition's; skipped", "topic", m.Topic, "partition", m.Partition,
				"producer_id", m.ProducerID, "epoch", m.ProducerEpoch, "msg", msg)
			return true
		}
		if attempt%20 == 19 {
			c.lg.Warn("a transaction marker is still not written; retrying", "topic", m.Topic, "partition", m.Partition,
				"producer_id", m.ProducerID, "err", err.Message, "msg", msg)
		}
		if !c.sleep(backoff(attempt)) {
			return false
		}
	}
}
