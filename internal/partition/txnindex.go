package partition

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// The transaction index (DESIGN.md §10): which producers have a transaction open on this
// partition and from which offset, and which transactions ended in an abort, with the
// offsets they spanned. It is built from the log in offset order, from entries that are
// already committed, so every replica builds the same index and nothing in it is ever
// undone by a new leader's truncation: what Raft committed is never truncated.
//
// It answers the two questions read_committed asks of a partition:
//   - the last stable offset: the first offset of the oldest open transaction, but never
//     past what this replica has applied (a batch above that may open a transaction the
//     index does not know of yet: under write caching the visible offset runs ahead of
//     the commit), nor past the last visible offset;
//   - the aborted transactions that overlap a range a Fetch returns, which consumers use
//     to drop the aborted records themselves (Kafka serves aborted data and lets the
//     client filter it, so read_uncommitted and read_committed read the same bytes).
//
// Retention and DeleteRecords never move the log start past the first offset of an open
// transaction (read.go): a replica that rebuilds its index from its log finds every open
// transaction at its true first batch, so all replicas agree on the last stable offset,
// and a change of leader never moves it backwards.
//
// A marker of a producer that has no transaction open here (a partition that was added
// to a transaction but got no data) leaves nothing in the index: there is nothing for a
// consumer to drop.

// AbortedTxn is one aborted transaction on the partition: its producer, the offset of its
// first batch here, and the offset of its abort marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

type openTxn struct {
	first int64
	epoch int16
}

// OpenTxn is one transaction open on the partition: its producer and epoch, and the offset
// of its first batch here.
type OpenTxn struct {
	ProducerID    int64
	ProducerEpoch int16
	FirstOffset   int64
}

type txnIndex struct {
	open map[int64]openTxn
	// aborted is in log order, so ordered by LastOffset.
	aborted []AbortedTxn
	// readTo is the offset past the last batch read into the index: a batch below it is
	// one delivered again (raft re-applies entries after a restart).
	readTo int64
}

func newTxnIndex(from int64) *txnIndex {
	return &txnIndex{open: make(map[int64]openTxn), readTo: from}
}

// add reads one stored batch at base into the index. Batches must come in offset order,
// each at or past readTo; a batch below it (read again after a restart of the reader) is
// ignored.
func (x *txnIndex) add(base int64, batch []byte) {
	h, ok := recordbatch.ParseHeader(batch)
	if !ok || base < x.readTo {
		return
	}
	x.readTo = base + int64(h.Records())
	if h.Attributes&recordbatch.AttrTransactional == 0 || h.ProducerID < 0 {
		return
	}
	if h.Attributes&recordbatch.AttrControl == 0 {
		if _, ok := x.open[h.ProducerID]; !ok {
			x.open[h.ProducerID] = openTxn{first: base, epoch: h.ProducerEpoch}
		}
		return
	}
	typ, ok := recordbatch.ParseControl(batch)
	if !ok {
		return
	}
	t, wasOpen := x.open[h.ProducerID]
	delete(x.open, h.ProducerID)
	if wasOpen && typ == recordbatch.ControlAbort {
		x.aborted = append(x.aborted, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: t.first, LastOffset: base})
	}
}

// lastStable is the last stable offset given upTo, the lower of the partition's last
// visible offset and the offset past its last applied entry.
func (x *txnIndex) lastStable(upTo int64) int64 { return min(upTo, x.firstOpen()) }

// firstOpen is the first offset of the oldest open transaction, math.MaxInt64 if none.
func (x *txnIndex) firstOpen() int64 {
	first := int64(math.MaxInt64)
	for _, t := range x.open {
		first = min(first, t.first)
	}
	return first
}

// abortedIn lists the aborted transactions that have records in [from, to): those whose
// marker is at or past from and whose first batch is below to, in marker order.
func (x *txnIndex) abortedIn(from, to int64) []AbortedTxn {
	i := sort.Search(len(x.aborted), func(i int) bool { return x.aborted[i].LastOffset >= from })
	var out []AbortedTxn
	for _, a := range x.aborted[i:] {
		if a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// openTxns lists the open transactions, oldest first.
func (x *txnIndex) openTxns() []OpenTxn {
	out := make([]OpenTxn, 0, len(x.open))
	for _, id := range slices.Sorted(maps.Keys(x.open)) {
		t := x.open[id]
		out = append(out, OpenTxn{ProducerID: id, ProducerEpoch: t.epoch, FirstOffset: t.first})
	}
	slices.SortStableFunc(out, func(a, b OpenTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return out
}

// trim forgets the aborted transactions wholly below the log start: no fetch can reach
// their records any more.
func (x *txnIndex) trim(logStart int64) {
	i := sort.Search(len(x.aborted), func(i int) bool { return x.aborted[i].LastOffset >= logStart })
	x.aborted = slices.Delete(x.aborted, 0, i)
}
