package partition

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/internal/storage"
)

func defaultConfig() config.TopicConfig {
	return config.ResolveTopic(nil, nil)
}

// harness runs one partition as the sole voter of its Raft group on a host of its own.
type harness struct {
	t    *testing.T
	fs   storage.FS
	host *raft.Host
	p    *Partition
}

func newHarness(t *testing.T, cfg config.TopicConfig) *harness {
	t.Helper()
	h := &harness{t: t, fs: storage.NewMemFS()}
	h.open(cfg)
	t.Cleanup(func() { h.p.Close(); h.host.Close() })
	return h
}

type dropSender struct{}

func (dropSender) Send(uint64, *raft.Batch) {}

func (h *harness) open(cfg config.TopicConfig) {
	h.t.Helper()
	if h.host == nil {
		h.host = raft.NewHost(raft.HostOptions{NodeID: 1, Transport: dropSender{}, TickInterval: 10 * time.Millisecond})
	}
	ls, err := raft.Open(storage.Options{FS: h.fs, Dir: "/p", SegmentBytes: cfg.SegmentBytes, SegmentMs: cfg.SegmentMs})
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := Open(Options{Topic: "t", Partition: 0, Storage: ls, Host: h.host, Group: 7, Self: 1, Config: cfg})
	if err != nil {
		h.t.Fatal(err)
	}
	h.p = p
}

func (h *harness) reopen() {
	h.t.Helper()
	cfg := h.p.Config()
	if err := h.p.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open(cfg)
}

func (h *harness) produce(b []byte, acks int16) ProduceResult {
	h.t.Helper()
	res, wait := h.p.Produce(b, acks)
	if wait != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res = wait(ctx)
	}
	return res
}

func idem(pid int64, epoch int16, seq int32, n int) []byte {
	b := kafkatest.Plain(n, 1000)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	return b.Bytes()
}

func TestStrictAcksAllWaitsForFlush(t *testing.T) {
	h := newHarness(t, defaultConfig())
	res := h.produce(kafkatest.Plain(3, 1000).Bytes(), -1)
	if res.Err != nil || res.BaseOffset != 0 {
		t.Fatalf("produce: %+v", res)
	}
	b := h.p.Boundaries()
	if b.Flushed < 3 || b.Committed < 3 || b.LastVisible < 3 {
		t.Fatalf("acks=-1 returned before the batch was flushed and committed: %+v", b)
	}
	res = h.produce(kafkatest.Plain(2, 1000).Bytes(), -1)
	if res.BaseOffset != 3 {
		t.Fatalf("second batch offset %d, want 3", res.BaseOffset)
	}
}

func TestWriteCachingAcksBeforeFlush(t *testing.T) {
	cfg := defaultConfig()
	cfg.WriteCaching = true
	cfg.FlushMs = int64(time.Hour / time.Millisecond)
	cfg.FlushBytes = 1 << 40
	h := newHarness(t, cfg)
	res := h.produce(kafkatest.Plain(3, 1000).Bytes(), -1)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	b := h.p.Boundaries()
	if b.Flushed != 0 || b.LastVisible != 3 || b.Committed != 0 {
		t.Fatalf("write caching: want visible 3 and nothing flushed yet, got %+v", b)
	}
	// Switching write caching off at run time must make the next acks=-1 wait for fsync,
	// and the flusher must not be left waiting for the hour-long timer.
	cfg.WriteCaching = false
	h.p.SetConfig(cfg)
	h.produce(kafkatest.Plain(1, 1000).Bytes(), -1)
	if b := h.p.Boundaries(); b.Flushed < 4 || b.Committed < 4 {
		t.Fatalf("strict again: %+v", b)
	}
}

func TestWriteCachingFlushesByTimer(t *testing.T) {
	cfg := defaultConfig()
	cfg.WriteCaching = true
	cfg.FlushMs = 20
	cfg.FlushBytes = 1 << 40
	h := newHarness(t, cfg)
	h.produce(kafkatest.Plain(1, 1000).Bytes(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := waitBoundary(ctx, h.p, func(b Boundaries) bool { return b.Flushed >= 1 }); err != nil {
		t.Fatal("flush.ms never flushed the write")
	}
}

func TestWriteCachingFlushesByBytes(t *testing.T) {
	cfg := defaultConfig()
	cfg.WriteCaching = true
	cfg.FlushMs = int64(time.Hour / time.Millisecond)
	cfg.FlushBytes = 1
	h := newHarness(t, cfg)
	h.produce(kafkatest.Plain(1, 1000).Bytes(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := waitBoundary(ctx, h.p, func(b Boundaries) bool { return b.Flushed >= 1 }); err != nil {
		t.Fatal("flush.bytes never flushed the write")
	}
}

func waitBoundary(ctx context.Context, p *Partition, cond func(Boundaries) bool) error {
	for {
		p.mu.Lock()
		ok, ch := cond(p.bounds), p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func TestBadBatchesStoreNothing(t *testing.T) {
	cfg := defaultConfig()
	cfg.MaxMessageBytes = 200
	h := newHarness(t, cfg)
	good := kafkatest.Plain(2, 1000).Bytes()
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff
	old := append([]byte(nil), good...)
	old[recordbatch.MagicPos] = 1
	big := kafkatest.Batch{Values: [][]byte{make([]byte, 300)}, ProducerID: -1, BaseSequence: -1}.Bytes()
	ctrl := kafkatest.Batch{Values: [][]byte{{1}}, ProducerID: -1, BaseSequence: -1, Attributes: recordbatch.AttrControl}.Bytes()
	badCount := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(badCount[recordbatch.RecordCountPos:], 7)
	for _, tc := range []struct {
		name string
		b    []byte
		want *kerr.Error
	}{
		{"crc", corrupt, kerr.CorruptMessage},
		{"magic", old, kerr.UnsupportedForMessageFormat},
		{"too large", big, kerr.MessageTooLarge},
		{"control", ctrl, kerr.InvalidRecord},
		{"truncated", good[:40], kerr.CorruptMessage},
		{"length", good[:len(good)-3], kerr.CorruptMessage},
		{"empty", nil, kerr.InvalidRecord},
		{"two batches", append(append([]byte(nil), good...), good...), kerr.InvalidRecord},
	} {
		res := h.produce(tc.b, -1)
		if res.Err != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, res.Err, tc.want)
		}
	}
	if b := h.p.Boundaries(); b.LogEnd != 0 {
		t.Fatalf("bad batches stored data: %+v", b)
	}
}

func TestIdempotentDedupeAndGaps(t *testing.T) {
	h := newHarness(t, defaultConfig())
	first := h.produce(idem(7, 0, 0, 3), -1)
	second := h.produce(idem(7, 0, 3, 2), -1)
	if first.BaseOffset != 0 || second.BaseOffset != 3 {
		t.Fatalf("offsets %d %d", first.BaseOffset, second.BaseOffset)
	}
	if dup := h.produce(idem(7, 0, 0, 3), -1); dup.Err != nil || dup.BaseOffset != 0 {
		t.Fatalf("retry of the first batch: %+v", dup)
	}
	if gap := h.produce(idem(7, 0, 9, 1), -1); gap.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("gap: %+v", gap)
	}
	if stale := h.produce(idem(7, -1+0, 5, 1), -1); stale.Err == nil {
		t.Fatalf("older epoch accepted: %+v", stale)
	}
	if unknown := h.produce(idem(8, 0, 4, 1), -1); unknown.Err != kerr.UnknownProducerID {
		t.Fatalf("unknown producer with non-zero sequence: %+v", unknown)
	}
	if b := h.p.Boundaries(); b.LogEnd != 5 {
		t.Fatalf("log end %d, want 5: rejected batches must not be stored", b.LogEnd)
	}
	// A new epoch starts over at sequence 0.
	if r := h.produce(idem(7, 1, 0, 1), -1); r.Err != nil || r.BaseOffset != 5 {
		t.Fatalf("new epoch: %+v", r)
	}

	h.reopen()
	if dup := h.produce(idem(7, 1, 0, 1), -1); dup.Err != nil || dup.BaseOffset != 5 {
		t.Fatalf("retry after restart must return the original offset: %+v", dup)
	}
	if next := h.produce(idem(7, 1, 1, 1), -1); next.Err != nil || next.BaseOffset != 6 {
		t.Fatalf("next batch after restart: %+v", next)
	}
}

func TestFetchAndListOffsets(t *testing.T) {
	h := newHarness(t, defaultConfig())
	h.produce(kafkatest.Plain(3, 1000).Bytes(), -1)
	h.produce(kafkatest.Plain(3, 5000).Bytes(), -1)

	mid := h.p.Fetch(4, 1<<20, -1)
	if mid.Err != nil || mid.HighWatermark != 6 {
		t.Fatalf("fetch: %+v", mid)
	}
	hdr, _ := recordbatch.ParseHeader(mid.Records)
	if hdr.BaseOffset != 3 {
		t.Fatalf("a fetch inside a batch must return that whole batch, got base %d", hdr.BaseOffset)
	}
	if r := h.p.Fetch(6, 1<<20, -1); r.Err != nil || len(r.Records) != 0 {
		t.Fatalf("fetch at the end: %+v", r)
	}
	if r := h.p.Fetch(7, 1<<20, -1); r.Err != kerr.OffsetOutOfRange {
		t.Fatalf("fetch past the end: %+v", r)
	}
	if r := h.p.Fetch(0, 1<<20, h.p.LeaderEpoch()+1); r.Err != kerr.UnknownLeaderEpoch {
		t.Fatalf("future epoch: %+v", r)
	}
	if r := h.p.Fetch(0, 1<<20, h.p.LeaderEpoch()-1); r.Err != kerr.FencedLeaderEpoch {
		t.Fatalf("stale epoch: %+v", r)
	}

	for _, tc := range []struct {
		ts, want int64
	}{{ListEarliest, 0}, {ListLatest, 6}, {1001, 1}, {1002, 2}, {3000, 3}, {5001, 4}, {9999, -1}} {
		if off, _, err := h.p.ListOffset(tc.ts, false); err != nil || off != tc.want {
			t.Errorf("ListOffset(%d) = %d, %v; want %d", tc.ts, off, err, tc.want)
		}
	}
	if off, ts, _ := h.p.ListOffset(ListMaxTimestamp, false); ts != 5002 || off != 5 {
		t.Errorf("max timestamp: offset %d ts %d", off, ts)
	}
	if ep, end := h.p.EpochEndOffset(h.p.LeaderEpoch()); ep != h.p.LeaderEpoch() || end != 6 {
		t.Errorf("EpochEndOffset = %d, %d", ep, end)
	}

	if low, err := h.p.DeleteRecords(4); err != nil || low != 4 {
		t.Fatalf("DeleteRecords: %d %v", low, err)
	}
	if r := h.p.Fetch(2, 1<<20, -1); r.Err != kerr.OffsetOutOfRange {
		t.Fatalf("fetch below log start: %+v", r)
	}
	if _, err := h.p.DeleteRecords(99); err != kerr.OffsetOutOfRange {
		t.Fatalf("DeleteRecords past the high watermark: %v", err)
	}
	h.reopen()
	if b := h.p.Boundaries(); b.LogStart != 4 || b.LogEnd != 6 {
		t.Fatalf("after restart: %+v", b)
	}
}

func TestWaitersFailWhenClosed(t *testing.T) {
	cfg := defaultConfig()
	cfg.WriteCaching = false
	h := newHarness(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.p.WaitVisible(ctx, 100); err == nil {
		t.Fatal("WaitVisible returned success for an offset that was never written")
	}
}

// slowSyncFS makes every fsync take a while, as a real disk's does, so that concurrent
// producers have the chance to share one.
type slowSyncFS struct{ storage.FS }

func (f slowSyncFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return slowSyncFile{file}, nil
}

type slowSyncFile struct{ storage.File }

func (f slowSyncFile) Sync() error {
	time.Sleep(2 * time.Millisecond) // the simulated device latency, not a wait for a condition
	return f.File.Sync()
}

func TestGroupCommitSharesFsyncs(t *testing.T) {
	h := &harness{t: t, fs: slowSyncFS{storage.NewMemFS()}}
	h.open(defaultConfig())
	t.Cleanup(func() { h.p.Close(); h.host.Close() })
	const writers, each = 8, 50
	done := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			for i := 0; i < each; i++ {
				res, wait := h.p.Produce(kafkatest.Plain(1, 1000).Bytes(), -1)
				if res.Err != nil {
					done <- res.Err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				r := wait(ctx)
				cancel()
				if r.Err != nil {
					done <- r.Err
					return
				}
			}
			done <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if b := h.p.Boundaries(); b.Committed != writers*each {
		t.Fatalf("committed %d", b.Committed)
	}
	// Eight producers each waiting for their own acks=-1: one fsync per request would be
	// 400; group commit lets each fsync cover the requests that queued behind the last.
	if n := h.p.Flushes(); n > writers*each/2 {
		t.Fatalf("%d fsyncs for %d acks=-1 requests: group commit is not sharing them", n, writers*each)
	}
}

func TestEachOpenStartsANewEpoch(t *testing.T) {
	h := newHarness(t, defaultConfig())
	first := h.p.LeaderEpoch()
	h.produce(kafkatest.Plain(2, 1000).Bytes(), -1)
	h.reopen()
	second := h.p.LeaderEpoch()
	if second <= first {
		t.Fatalf("epoch %d after reopen, was %d", second, first)
	}
	if r := h.p.Fetch(0, 1<<20, first); r.Err != kerr.FencedLeaderEpoch {
		t.Fatalf("a fetch with the previous epoch must be fenced: %+v", r)
	}
	// The epoch's internal entry takes no offset: the next batch follows the last record.
	if r := h.produce(kafkatest.Plain(1, 1000).Bytes(), -1); r.BaseOffset != 2 {
		t.Fatalf("offset after a new epoch: %d", r.BaseOffset)
	}
	if ep, end := h.p.EpochEndOffset(first); ep != first || end != 2 {
		t.Fatalf("EpochEndOffset(%d) = %d, %d; want %d, 2", first, ep, end, first)
	}
	b := h.p.Fetch(2, 1<<20, second)
	if hdr, _ := recordbatch.ParseHeader(b.Records); hdr.LeaderEpoch != second {
		t.Fatalf("stored batch carries epoch %d, want %d", hdr.LeaderEpoch, second)
	}
}

func TestProducersBelowLogStartAreForgotten(t *testing.T) {
	h := newHarness(t, defaultConfig())
	h.produce(idem(3, 0, 0, 2), -1)
	h.produce(kafkatest.Plain(2, 1000).Bytes(), -1)
	if _, err := h.p.DeleteRecords(2); err != nil {
		t.Fatal(err)
	}
	// Everything producer 3 wrote is gone, so is its state: a continuing sequence now
	// gets UNKNOWN_PRODUCER_ID (clients reset), and the table does not keep it forever.
	if r := h.produce(idem(3, 0, 2, 1), -1); r.Err != kerr.UnknownProducerID {
		t.Fatalf("after its batches were deleted: %+v", r)
	}
	h.p.appendMu.Lock()
	n := len(h.p.producers)
	h.p.appendMu.Unlock()
	if n != 0 {
		t.Fatalf("%d producers remembered", n)
	}
}
