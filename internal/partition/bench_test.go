package partition

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
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
