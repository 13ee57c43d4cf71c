package partition

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// appendRaw proposes a batch past every admission check (Produce's, ProduceTxn's and
// WriteMarker's) and waits for it to commit: the transaction index is tested on the log
// alone, whatever wrote it.
func (h *harness) appendRaw(batch []byte) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := h.p.host.Propose(ctx, h.p.group, batch); err != nil {
		h.t.Fatal(err)
	}
}

// waitLastStable waits until the partition's last stable offset is want, and fails the test
// if it settles elsewhere.
func waitLastStable(t *testing.T, p *Partition, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	moved := make(chan struct{}, 1)
	p.Watch(moved)
	defer p.Unwatch(moved)
	for p.LastStable() != want {
		select {
		case <-moved:
		case <-ctx.Done():
			t.Fatalf("last stable offset %d, want %d (visible %d)", p.LastStable(), want, p.Boundaries().LastVisible)
		}
	}
}

// TestTxnIndexFollowsTheLog: the index is fed by what the replica applies, so an open
// transaction holds the last stable offset at its first batch while later records become
// visible; its abort marker releases it and is listed for read_committed; and a restarted
// replica rebuilds the same answers from its log.
func TestTxnIndexFollowsTheLog(t *testing.T) {
	h := newHarness(t, defaultConfig())
	h.produce(kafkatest.Plain(2, 1000).Bytes(), -1) // offsets 0-1
	txn := kafkatest.Plain(3, 1000)
	txn.ProducerID, txn.ProducerEpoch, txn.BaseSequence = 9, 2, 0
	txn.Attributes |= recordbatch.AttrTransactional
	h.appendRaw(txn.Bytes())                        // offsets 2-4, open
	h.produce(kafkatest.Plain(1, 1000).Bytes(), -1) // offset 5
	if v := h.p.Boundaries().LastVisible; v != 6 {
		t.Fatalf("last visible %d, want 6", v)
	}
	waitLastStable(t, h.p, 2)
	if got := h.p.OpenTxns(); !slices.Equal(got, []OpenTxn{{ProducerID: 9, ProducerEpoch: 2, FirstOffset: 2}}) {
		t.Fatalf("open transactions %+v", got)
	}

	mh := recordbatch.PlainHeader(1000, 1000)
	mh.ProducerID, mh.ProducerEpoch = 9, 2
	h.appendRaw(recordbatch.EncodeControl(mh, recordbatch.ControlAbort, 0)) // offset 6
	waitLastStable(t, h.p, 7)
	want := []AbortedTxn{{ProducerID: 9, FirstOffset: 2, LastOffset: 6}}
	if got := h.p.AbortedTxns(0, 7); !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	if got := h.p.AbortedTxns(0, 2); len(got) != 0 {
		t.Fatalf("a fetch below the transaction is told of %+v", got)
	}

	h.reopen()
	waitLastStable(t, h.p, 7)
	if got := h.p.AbortedTxns(0, 7); !slices.Equal(got, want) {
		t.Fatalf("after a restart: aborted %+v, want %+v", got, want)
	}
	if got := h.p.OpenTxns(); len(got) != 0 {
		t.Fatalf("after a restart: open %+v", got)
	}
}

// TestTxnIndexStartsAfreshAfterASnapshot: when Raft skips entries (a follower caught up by
// a snapshot past its log), a transaction the index holds open from before the gap, whose
// marker was among the skipped entries, no longer holds the last stable offset.
func TestTxnIndexStartsAfreshAfterASnapshot(t *testing.T) {
	h := newHarness(t, defaultConfig())
	txn := kafkatest.Plain(2, 1000)
	txn.ProducerID, txn.ProducerEpoch, txn.BaseSequence = 9, 0, 0
	txn.Attributes |= recordbatch.AttrTransactional
	h.appendRaw(txn.Bytes()) // offsets 0-1, open
	if got := h.p.OpenTxns(); len(got) != 1 {
		t.Fatalf("open transactions %+v, want one", got)
	}
	h.p.txnMu.Lock()
	next := h.p.txnFed + 1
	h.p.txnMu.Unlock()
	// What a snapshot leaves Raft to deliver: entries from past the gap.
	h.p.applyCommitted(0, []*raftpb.Entry{{Index: new(next + 3), Type: raftpb.EntryNormal.Enum(), Data: kafkatest.Plain(1, 1000).Bytes()}})
	if got := h.p.OpenTxns(); len(got) != 0 {
		t.Fatalf("open transactions %+v after a gap, want none", got)
	}
	// Contiguous entries do not reset it.
	h.appendRaw(txn.Bytes())
	if got := h.p.OpenTxns(); len(got) != 1 {
		t.Fatalf("open transactions %+v, want the new one", got)
	}
}
