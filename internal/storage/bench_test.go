package storage

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchDir is where the disk benchmarks write: $CAIRN_BENCH_DIR, else the test's temp dir.
func benchDir(b *testing.B) string {
	if d := os.Getenv("CAIRN_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "cairn-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// BenchmarkAppendFlush measures the log's group-commit path on the real disk: writers
// append batches of 1 KiB records (serialized by a mutex, as the partition does), one
// flusher loops Flush, and each writer waits until FlushedIndex covers its entry before
// appending again. Reported: MB/s of batch bytes made durable, average bytes per fsync
// round (B/flush) and flush rounds per second.
func BenchmarkAppendFlush(b *testing.B) {
	for _, c := range []struct{ writers, records int }{{8, 16}, {8, 1}, {32, 16}, {16, 64}} {
		b.Run(fmt.Sprintf("writers=%d/records=%d", c.writers, c.records), func(b *testing.B) {
			benchAppendFlush(b, c.writers, c.records)
		})
	}
}

func benchAppendFlush(b *testing.B, writers, records int) {
	l := mustOpen(b, Options{Dir: benchDir(b)})
	defer l.Close()
	batch := makeBatch(records, time.Now().UnixMilli(), 1024, 1)
	b.SetBytes(int64(len(batch)))

	var appendMu sync.Mutex // the partition's append lock
	var fmu sync.Mutex
	flushed := sync.NewCond(&fmu)
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	var flushes atomic.Int64
	var flushErr atomic.Value
	var flusherWG sync.WaitGroup
	flusherWG.Add(1)
	go func() {
		defer flusherWG.Done()
		for {
			select {
			case <-kick:
			case <-done:
				return
			}
			if err := l.Flush(); err != nil {
				flushErr.Store(err)
			}
			flushes.Add(1)
			fmu.Lock()
			flushed.Broadcast()
			fmu.Unlock()
		}
	}()

	var remaining atomic.Int64
	remaining.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ents := make([]Entry, 1)
			for remaining.Add(-1) >= 0 {
				appendMu.Lock()
				ents[0] = Entry{Index: l.LastIndex() + 1, Term: 1, Type: EntryData, Data: batch}
				err := l.Append(ents)
				appendMu.Unlock()
				if err != nil {
					b.Error(err)
					return
				}
				select {
				case kick <- struct{}{}:
				default:
				}
				idx := ents[0].Index
				fmu.Lock()
				for l.FlushedIndex() < idx && flushErr.Load() == nil {
					flushed.Wait()
				}
				fmu.Unlock()
				if err := flushErr.Load(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	close(done)
	flusherWG.Wait()
	if n := flushes.Load(); n > 0 {
		b.ReportMetric(float64(int64(b.N)*int64(len(batch)))/float64(n), "B/flush")
		b.ReportMetric(float64(n)/el.Seconds(), "flushes/s")
	}
}

// BenchmarkDiskBaseline measures sequential write+fdatasync at several write sizes with
// DiskSyncBandwidth (the same FS code as the log). Set CAIRN_BENCH_SIZES to a
// comma-free list like "131072 1048576" to pick sizes.
func BenchmarkDiskBaseline(b *testing.B) {
	sizes := []int{16 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20}
	if s := os.Getenv("CAIRN_BENCH_SIZES"); s != "" {
		sizes = nil
		for _, f := range splitFields(s) {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("write=%d", size), func(b *testing.B) {
			dir := benchDir(b)
			b.SetBytes(int64(size))
			b.ResetTimer()
			bps, lat, err := DiskSyncBandwidth(dir, size, int64(b.N)*int64(size))
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(bps/1e6, "diskMB/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50sync-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99sync-us")
		})
	}
}

func splitFields(s string) []string {
	var out []string
	cur := ""
	for _, r := range s {
		if r == ' ' || r == ',' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			continue
		}
		cur += string(r)
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

func TestDiskSyncBandwidth(t *testing.T) {
	bps, lat, err := DiskSyncBandwidth(t.TempDir(), 4096, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if bps <= 0 || len(lat) != 16 {
		t.Fatalf("bps %f, %d latencies", bps, len(lat))
	}
	if _, _, err := DiskSyncBandwidth(t.TempDir(), 0, 1); err == nil {
		t.Fatal("accepted writeSize 0")
	}
}
