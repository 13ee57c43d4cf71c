package raft

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/storage"
)

// BenchmarkHostPropose measures the host's write path on one broker: proposals to one
// group whose only voter leads, 64 in flight, each waited for until committed (appended,
// flushed, applied) on MemFS, so the figure is the host's own cost and not a disk's.
func BenchmarkHostPropose(b *testing.B) {
	for _, caching := range []bool{false, true} {
		b.Run(fmt.Sprintf("write-caching=%v", caching), func(b *testing.B) {
			h := NewHost(HostOptions{NodeID: 1, Workers: 2})
			defer h.Close()
			ls, err := Open(storage.Options{FS: storage.NewMemFS(), Dir: "g"})
			if err != nil {
				b.Fatal(err)
			}
			cfg := GroupConfig{Storage: ls, Bootstrap: &pb.ConfState{Voters: []uint64{1}}}
			if caching {
				cfg.FlushDelay = func(int64, time.Duration) time.Duration { return 0 }
			}
			if err := h.AddGroup(1, cfg); err != nil {
				b.Fatal(err)
			}
			if err := h.Campaign(1); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			data := batch(10, 1)
			for {
				if _, _, err := h.Propose(ctx, 1, data); err == nil {
					break
				}
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			const inFlight = 64
			ps := make([]*Proposal, 0, inFlight)
			for done := 0; done < b.N; {
				ps = ps[:0]
				for i := 0; i < inFlight && done+i < b.N; i++ {
					p, err := h.ProposeAsync(1, data)
					if err != nil {
						b.Fatal(err)
					}
					ps = append(ps, p)
				}
				for _, p := range ps {
					if err := p.Wait(ctx, StageCommitted); err != nil {
						b.Fatal(err)
					}
				}
				done += len(ps)
			}
		})
	}
}
