// Package partitiontest opens real single-voter partitions on an in-memory filesystem, for
// the unit tests of the packages that keep their state in a partition (the group and
// transaction coordinators). It owns no state of a running broker and must be imported
// by tests only.
package partitiontest

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/storage"
)

// NewRaftHost is a Raft host whose groups all have this node as sole voter, so nothing is
// ever sent. It is closed when the test ends, after the cleanups registered later (the
// partitions and whatever runs on them).
func NewRaftHost(t testing.TB) *raft.Host {
	h := raft.NewHost(raft.HostOptions{NodeID: 1, Transport: dropSender{}, TickInterval: 10 * time.Millisecond})
	t.Cleanup(h.Close)
	return h
}

// dropSender is the transport of a host with no peers.
type dropSender struct{}

func (dropSender) Send(uint64, *raft.Batch) {}

// Open opens partitions 0..n-1 of topic on fs, with default topic settings, as Raft groups
// 1..n of h: the same fs and h reopen what an earlier Open wrote. The caller closes them.
func Open(t testing.TB, fs storage.FS, h *raft.Host, topic string, n int32) []*partition.Partition {
	t.Helper()
	tc := config.ResolveTopic(nil, nil)
	var ps []*partition.Partition
	for i := int32(0); i < n; i++ {
		ls, err := raft.Open(storage.Options{FS: fs, Dir: fmt.Sprintf("/%s-%d", topic, i), SegmentBytes: tc.SegmentBytes, SegmentMs: tc.SegmentMs})
		if err != nil {
			t.Fatal(err)
		}
		p, err := partition.Open(partition.Options{Topic: topic, Partition: i, Storage: ls, Host: h,
			Group: uint64(i) + 1, Self: 1, Config: tc})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}
