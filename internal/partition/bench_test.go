package partition

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/internal/storage"
)

// BenchmarkProduce measures the partition's produce path (validation, admission, the
// proposal, the leader's append and, for acks=-1, the commit) on one sole-voter
// partition over MemFS, from parallel producers, so that a change to the partition can
// be compared against its base without a disk or a network in the figures.
func BenchmarkProduce(b *testing.B) {
	batch := kafkatest.Batch{Timestamp: 1000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for range 16 {
		batch.Values = append(batch.Values, bytes.Repeat([]byte{'v'}, 64))
	}
	records := batch.Bytes()
	for _, acks := range []int16{1, -1} {
		b.Run(fmt.Sprintf("acks=%d", acks), func(b *testing.B) {
			host := raft.NewHost(raft.HostOptions{NodeID: 1, Transport: dropSender{}, TickInterval: 10 * time.Millisecond})
			defer host.Close()
			ls, err := raft.Open(storage.Options{FS: storage.NewMemFS(), Dir: "/p"})
			if err != nil {
				b.Fatal(err)
			}
			p, err := Open(Options{Topic: "t", Partition: 0, Storage: ls, Host: host, Group: 7, Self: 1, Config: defaultConfig()})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			b.SetBytes(int64(len(records)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, wait := p.Produce(records, acks)
					if wait != nil {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						res = wait(ctx)
						cancel()
					}
					if res.Err != nil {
						b.Fatalf("produce: %v %s", res.Err, res.Msg)
					}
				}
			})
		})
	}
}

// BenchmarkServeFetch measures a consumer's fetch of a partition on a real filesystem (the
// answer as file ranges, as the Kafka layer sends them), at both isolation levels, so the
// read_committed work can be seen not to reach read_uncommitted: the last stable offset
// is a boundary already computed, and the aborted index is asked only under
// read_committed. "aborted" reads a log in which every fourth batch is an aborted
// transaction, where the end of the data must be read from its last batch.
func BenchmarkServeFetch(b *testing.B) {
	batch := kafkatest.Batch{Timestamp: 1000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	for range 16 {
		batch.Values = append(batch.Values, bytes.Repeat([]byte{'v'}, 64))
	}
	records := batch.Bytes()
	for _, c := range []struct {
		name               string
		committed, aborted bool
	}{{"read_uncommitted", false, false}, {"read_committed", true, false}, {"read_committed/aborted", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			host := raft.NewHost(raft.HostOptions{NodeID: 1, Transport: dropSender{}, TickInterval: 10 * time.Millisecond})
			defer host.Close()
			ls, err := raft.Open(storage.Options{FS: rootedFS{storage.OSFS(), b.TempDir()}, Dir: "/p"})
			if err != nil {
				b.Fatal(err)
			}
			p, err := Open(Options{Topic: "t", Partition: 0, Storage: ls, Host: host, Group: 7, Self: 1, Config: defaultConfig()})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for i := range 64 {
				data := records
				if c.aborted && i%4 == 1 {
					data = txnBatch(int64(i), 16, 1000)
				}
				if err := p.AppendForTest(ctx, data); err != nil {
					b.Fatal(err)
				}
				if c.aborted && i%4 == 1 {
					if err := p.AppendForTest(ctx, marker(int64(i), recordbatch.ControlAbort)); err != nil {
						b.Fatal(err)
					}
				}
			}
			end := p.Boundaries().LogEnd
			for p.LastStable() != end {
				time.Sleep(time.Millisecond)
			}
			req := FetchRequest{Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, ReadCommitted: c.committed}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res := p.ServeFetch(req)
				if res.Err != nil || res.Files.Len() == 0 || (c.aborted && len(res.Aborted) == 0) {
					b.Fatalf("fetch: %v, %d ranges, %d aborted", res.Err, res.Files.Len(), len(res.Aborted))
				}
				res.Release()
			}
		})
	}
}
