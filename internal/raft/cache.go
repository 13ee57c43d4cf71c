package raft

import (
	"sync"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// maxCacheBytes bounds one group's entry cache (payload bytes, see heldBytes).
const maxCacheBytes = 4 << 20

// heldBytes is what keeping e is counted as. A leader's entries share their Data with the
// request frame they were produced in (third_party/etcd-raft no longer copies proposals),
// so an entry may keep more alive than its own bytes. Counting its capacity counts the
// frame from the entry to the frame's end: a batch at the front of a large multi-partition
// request counts the whole request. The frame's bytes before the entry are counted by the
// entries there while those are cached; once they are trimmed, the last entry of a frame
// can keep the frame alive alone until it is trimmed too, which the replication and apply
// windows keep short.
func heldBytes(e *pb.Entry) int { return cap(e.GetData()) }

// entryCache keeps the newest entries a replica appended, so that raft's reads of them
// (Entries: for every MsgApp a leader sends once the entries are stable, and for the
// committed entries every replica applies) come from memory instead of the segment files:
// a read there costs a system call and two copies per entry. The host trims what it has
// applied and, on a leader, what every live voter has acknowledged (group.trimCache), so
// it holds the replication and apply windows, at most maxCacheBytes.
type entryCache struct {
	mu    sync.Mutex
	first uint64 // index of ents[0]
	ents  []*pb.Entry
	sizes []uint64 // raft's measure of each entry (its protobuf size)
	bytes int
}

// add records entries just written (contiguous), replacing any cached suffix they overwrite.
func (c *entryCache) add(ents []*pb.Entry) {
	if len(ents) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	lo := ents[0].GetIndex()
	if n := uint64(len(c.ents)); n == 0 || lo < c.first || lo > c.first+n {
		c.resetLocked()
		c.first = lo
	} else {
		c.truncateLocked(lo)
	}
	for _, e := range ents {
		c.ents = append(c.ents, e)
		c.sizes = append(c.sizes, uint64(proto.Size(e)))
		c.bytes += heldBytes(e)
	}
	drop := 0
	for c.bytes > maxCacheBytes && drop < len(c.ents)-1 {
		c.bytes -= heldBytes(c.ents[drop])
		drop++
	}
	c.dropFrontLocked(drop)
}

// truncateLocked drops the entries at and above index.
func (c *entryCache) truncateLocked(index uint64) {
	if index < c.first {
		c.resetLocked()
		return
	}
	keep := index - c.first
	if keep >= uint64(len(c.ents)) {
		return
	}
	for _, e := range c.ents[keep:] {
		c.bytes -= heldBytes(e)
	}
	clear(c.ents[keep:])
	c.ents, c.sizes = c.ents[:keep], c.sizes[:keep]
}

func (c *entryCache) truncate(index uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.truncateLocked(index)
}

func (c *entryCache) dropFrontLocked(n int) {
	if n <= 0 {
		return
	}
	clear(c.ents[:n])
	c.ents, c.sizes = c.ents[n:], c.sizes[n:]
	c.first += uint64(n)
	if len(c.ents) == 0 {
		c.ents, c.sizes = nil, nil
	}
}

// trimBelow drops the entries below index (every voter has them).
func (c *entryCache) trimBelow(index uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if index <= c.first || len(c.ents) == 0 {
		return
	}
	n := min(int(index-c.first), len(c.ents))
	for _, e := range c.ents[:n] {
		c.bytes -= heldBytes(e)
	}
	c.dropFrontLocked(n)
}

func (c *entryCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetLocked()
}

func (c *entryCache) resetLocked() {
	c.ents, c.sizes, c.bytes, c.first = nil, nil, 0, 0
}

// get returns the entries in [lo, hi) limited by maxSize as raft.Storage.Entries does
// (at least one), or false if the cache does not hold them all.
func (c *entryCache) get(lo, hi, maxSize uint64) ([]*pb.Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := uint64(len(c.ents))
	if n == 0 || lo < c.first || hi > c.first+n || lo >= hi {
		return nil, false
	}
	out := make([]*pb.Entry, 0, min(hi-lo, 64))
	var total uint64
	for i := lo - c.first; i < hi-c.first; i++ {
		if len(out) > 0 && total+c.sizes[i] > maxSize {
			break
		}
		total += c.sizes[i]
		out = append(out, c.ents[i])
	}
	return out, true
}
