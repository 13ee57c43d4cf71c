package partition

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/internal/storage"
)

// txnBatch is n records of producer pid in a transaction, at timestamps ts on.
func txnBatch(pid int64, n int, ts int64) []byte {
	b := kafkatest.Plain(n, ts)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, 0
	b.Attributes |= recordbatch.AttrTransactional
	return b.Bytes()
}

// marker is producer pid's commit or abort marker.
func marker(pid int64, typ recordbatch.ControlType) []byte {
	h := recordbatch.PlainHeader(1000, 1000)
	h.ProducerID, h.ProducerEpoch = pid, 0
	return recordbatch.EncodeControl(h, typ, 0)
}

// batchOffsets lists the base offsets of the batches a fetch returned.
func batchOffsets(t *testing.T, res FetchResult) []int64 {
	t.Helper()
	var out []int64
	for b := readFiles(t, res); len(b) >= recordbatch.HeadSize; b = b[recordbatch.Size(b):] {
		out = append(out, recordbatch.BaseOffset(b))
	}
	return out
}

// txnLog writes: plain 0-1, producer 9's transaction 2-4 (open), plain 5, with
// timestamps 1000 on for the plain batches and 5000 on for the transaction.
func txnLog(h *harness) {
	h.produce(kafkatest.Plain(2, 1000).Bytes(), -1)
	h.appendRaw(txnBatch(9, 3, 5000))
	h.produce(kafkatest.Plain(1, 1000).Bytes(), -1)
	waitLastStable(h.t, h.p, 2)
}

// TestReadCommittedFetch: read_committed stops at the open transaction's first batch while
// read_uncommitted reads on to the high watermark; both are told the last stable offset;
// an offset between the two bounds gets nothing and no error; after the abort marker
// read_committed reads everything and is told of the aborted transaction, but only when
// what it gets reaches the transaction. On a real filesystem (file ranges, whose end is
// read from the last batch's header) and in memory (bytes).
func TestReadCommittedFetch(t *testing.T) {
	for _, fs := range []struct {
		name string
		fs   storage.FS
	}{{"os", rootedFS{storage.OSFS(), t.TempDir()}}, {"mem", storage.NewMemFS()}} {
		t.Run(fs.name, func(t *testing.T) {
			h := &harness{t: t, fs: fs.fs}
			h.open(defaultConfig())
			t.Cleanup(func() { h.p.Close(); h.host.Close() })
			txnLog(h)
			fetch := func(offset int64, maxBytes int32, committed bool) FetchResult {
				t.Helper()
				res := h.p.ServeFetch(FetchRequest{Offset: offset, MaxBytes: maxBytes, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, ReadCommitted: committed})
				t.Cleanup(res.Release)
				if res.Err != nil {
					t.Fatalf("fetch at %d: %v", offset, res.Err)
				}
				return res
			}

			res := fetch(0, 1<<20, true)
			if got := batchOffsets(t, res); !slices.Equal(got, []int64{0}) || res.LastStable != 2 || res.HighWatermark != 6 || res.Aborted != nil {
				t.Fatalf("read_committed during the transaction: batches %v, lso %d, hw %d, aborted %v", got, res.LastStable, res.HighWatermark, res.Aborted)
			}
			res = fetch(0, 1<<20, false)
			if got := batchOffsets(t, res); !slices.Equal(got, []int64{0, 2, 5}) || res.LastStable != 2 || res.Aborted != nil {
				t.Fatalf("read_uncommitted: batches %v, lso %d, aborted %v", got, res.LastStable, res.Aborted)
			}
			if res = fetch(3, 1<<20, true); res.Size() != 0 {
				t.Fatalf("read_committed between the last stable offset and the high watermark got %d bytes", res.Size())
			}
			if r := h.p.ServeFetch(FetchRequest{Offset: 7, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, ReadCommitted: true}); r.Err != kerr.OffsetOutOfRange {
				t.Fatalf("read_committed past the log end: %v", r.Err)
			}

			h.appendRaw(marker(9, recordbatch.ControlAbort)) // offset 6
			waitLastStable(t, h.p, 7)
			want := []AbortedTxn{{ProducerID: 9, FirstOffset: 2, LastOffset: 6}}
			res = fetch(0, 1<<20, true)
			if got := batchOffsets(t, res); !slices.Equal(got, []int64{0, 2, 5, 6}) || !slices.Equal(res.Aborted, want) {
				t.Fatalf("read_committed after the abort: batches %v, aborted %v", got, res.Aborted)
			}
			if (res.Files.Len() > 0) != (fs.name == "os") {
				t.Fatalf("%d file ranges", res.Files.Len())
			}
			// One byte: the first batch only, which ends where the transaction begins.
			if res = fetch(0, 1, true); !slices.Equal(batchOffsets(t, res), []int64{0}) || res.Aborted != nil {
				t.Fatalf("read_committed of the batch before the transaction: aborted %v", res.Aborted)
			}
			if res = fetch(5, 1<<20, true); !slices.Equal(res.Aborted, want) {
				t.Fatalf("read_committed from inside the transaction: aborted %v", res.Aborted)
			}
			if res = fetch(7, 1<<20, true); res.Size() != 0 || res.Aborted != nil {
				t.Fatalf("read_committed past the marker: %d bytes, aborted %v", res.Size(), res.Aborted)
			}
			if res = fetch(0, 1<<20, false); res.Aborted != nil {
				t.Fatalf("read_uncommitted is told of aborted transactions: %v", res.Aborted)
			}
		})
	}
}

// TestReadCommittedListOffset: latest is the last stable offset under read_committed, and a
// timestamp lookup finds nothing at or past it; once the transaction commits both see it.
func TestReadCommittedListOffset(t *testing.T) {
	h := newHarness(t, defaultConfig())
	txnLog(h)
	for _, c := range []struct {
		ts        int64
		committed bool
		want      int64
	}{
		{ListLatest, false, 6}, {ListLatest, true, 2},
		{ListEarliest, true, 0},
		{1001, true, 1}, {5000, false, 2}, {5000, true, -1},
		{ListMaxTimestamp, false, 4}, {ListMaxTimestamp, true, -1},
	} {
		if off, _, err := h.p.ListOffset(c.ts, c.committed); err != nil || off != c.want {
			t.Errorf("ListOffset(%d, read_committed=%v) = %d, %v; want %d", c.ts, c.committed, off, err, c.want)
		}
	}
	h.appendRaw(marker(9, recordbatch.ControlCommit)) // offset 6
	waitLastStable(t, h.p, 7)
	for _, c := range []struct {
		ts   int64
		want int64
	}{{ListLatest, 7}, {5000, 2}, {ListMaxTimestamp, 4}} {
		if off, _, err := h.p.ListOffset(c.ts, true); err != nil || off != c.want {
			t.Errorf("after the commit: ListOffset(%d, read_committed) = %d, %v; want %d", c.ts, off, err, c.want)
		}
	}
}
