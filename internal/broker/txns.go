package broker

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/txn"
)

// The transaction coordinator (DESIGN.md §10) on this broker: it serves the transactional
// ids of the __transaction_state partitions this broker leads, as the group coordinator
// serves groups. Lock order: the coordinator calls its Host (the broker) without holding
// its own lock, and the broker calls into the coordinator holding only txnShardMu, which
// the coordinator never takes.

// startTxns starts the transaction coordinator. __transaction_state is created on the
// first FindCoordinator of a transactional id, as Kafka does.
func (b *Broker) startTxns() {
	n := b.clusterConfig().TxnStateLogNumPartitions
	if t, ok := b.state().Topic(txn.StateTopic); ok {
		n = t.Partitions()
	}
	b.txns = txn.New(txn.Options{
		Host:       txnHost{b},
		Partitions: n,
		Config:     b.clusterConfig,
		Logger:     b.lg,
	})
}

// Txns is the node's transaction coordinator.
func (b *Broker) Txns() *txn.Coordinator { return b.txns }

// ensureTxnTopic creates __transaction_state if it is missing: compacted, and with
// min.insync.replicas capped at its replication factor, so that a small cluster can still
// commit.
func (b *Broker) ensureTxnTopic() *Error {
	cc := b.clusterConfig()
	rf := max(1, min(cc.TxnStateLogReplicationFactor, int16(len(b.state().LiveBrokers()))))
	return b.ensureInternalTopic(txn.StateTopic, b.txns.Partitions(), rf, map[string]string{
		config.TopicCleanupPolicy:     "compact",
		config.TopicSegmentBytes:      strconv.Itoa(int(cc.TxnStateLogSegmentBytes)),
		config.TopicMinInsyncReplicas: strconv.Itoa(int(min(cc.TxnStateLogMinISR, int32(rf)))),
	})
}

// TxnCoordinator answers FindCoordinator for a transactional id: the broker that leads the
// id's __transaction_state partition.
func (b *Broker) TxnCoordinator(id string) (BrokerInfo, *kerr.Error) {
	if b.txns == nil || b.txns.Partitions() <= 0 {
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	if err := b.ensureTxnTopic(); err != nil {
		b.lg.Warn("creating "+txn.StateTopic, "err", err)
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	return b.shardLeader(txn.StateTopic, txn.PartitionFor(id, b.txns.Partitions()), func() {
		b.moveTxnShards(b.ledTxnPartitions())
	})
}

// moveTxnShards makes the transaction coordinator serve exactly the __transaction_state
// partitions in led, each under the leader epoch it is led at: a partition led again at a
// new epoch (this broker lost and regained it) is replayed afresh, because another
// coordinator may have changed it meanwhile, and its markers carry the new epoch.
func (b *Broker) moveTxnShards(led map[int32]int32) {
	if b.txns == nil {
		return
	}
	b.txnShardMu.Lock()
	defer b.txnShardMu.Unlock()
	for i, epoch := range led {
		cur, ok := b.txnShards[i]
		if ok && cur == epoch {
			continue
		}
		if ok {
			b.txns.Resign(i)
		}
		b.txns.BecomeLeader(i, epoch)
		b.txnShards[i] = epoch
	}
	for i := range b.txnShards {
		if _, ok := led[i]; !ok {
			b.txns.Resign(i)
			delete(b.txnShards, i)
		}
	}
}

// ledTxnPartitions lists the __transaction_state partitions this broker leads, with their
// leader epochs.
func (b *Broker) ledTxnPartitions() map[int32]int32 {
	led := map[int32]int32{}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, r := range b.replicas {
		if r.name == txn.StateTopic {
			if bd := r.p.Boundaries(); bd.IsLeader {
				led[r.p.ID()] = bd.LeaderEpoch
			}
		}
	}
	return led
}

// IsInternalTopic reports whether a topic holds a coordinator's state: clients may not
// write it, cut it, delete it or change its partition count.
func IsInternalTopic(name string) bool {
	return name == txn.OffsetsTopic || name == txn.StateTopic
}

// txnHost is the broker as the transaction coordinator sees it.
type txnHost struct{ b *Broker }

func (h txnHost) StatePartition(i int32) *partition.Partition {
	p, err := h.b.Partition(txn.StateTopic, i)
	if err != nil || !p.IsLeader() {
		return nil
	}
	return p
}

func (h txnHost) PartitionCount(topic string) (int32, bool) {
	info, ok := h.b.Topic(topic)
	return info.Partitions, ok
}

func (h txnHost) AllocateProducerID() (int64, *kerr.Error) {
	id, err := h.b.AllocateProducerID()
	if err != nil {
		return -1, err.Code
	}
	return id, nil
}

func (h txnHost) WriteMarker(ctx context.Context, m txn.Marker) (*kerr.Error, string) {
	return h.b.WriteTxnMarker(ctx, TxnMarker(m))
}
