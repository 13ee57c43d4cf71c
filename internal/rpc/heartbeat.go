package rpc

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
)

// Heartbeat is one group's entry in a coalesced heartbeat message. The transport treats it as
// an opaque fixed-size record; the Raft host gives the fields their meaning.
type Heartbeat struct {
	Group  uint64
	Term   uint64
	Commit uint64
}

// Heartbeat message layout (version 1):
//
//	version:uint8 (=1) | count:uint32 | count × (group:uint64 | term:uint64 | commit:uint64)
const (
	heartbeatVersion   = 1
	heartbeatHeaderLen = 1 + 4
	heartbeatEntryLen  = 24
)

// EncodeHeartbeats appends the encoding of hbs to buf.
func EncodeHeartbeats(buf []byte, hbs []Heartbeat) []byte {
	buf = slices.Grow(buf, heartbeatHeaderLen+heartbeatEntryLen*len(hbs))
	buf = append(buf, heartbeatVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(hbs)))
	for _, h := range hbs {
		buf = binary.BigEndian.AppendUint64(buf, h.Group)
		buf = binary.BigEndian.AppendUint64(buf, h.Term)
		buf = binary.BigEndian.AppendUint64(buf, h.Commit)
	}
	return buf
}

// DecodeHeartbeats decodes a message made by EncodeHeartbeats, appending to dst. The payload
// must hold exactly the entries its count says.
func DecodeHeartbeats(dst []Heartbeat, payload []byte) ([]Heartbeat, error) {
	if len(payload) < heartbeatHeaderLen {
		return dst, fmt.Errorf("rpc: heartbeat message of %d bytes is too short", len(payload))
	}
	if payload[0] != heartbeatVersion {
		return dst, fmt.Errorf("rpc: unsupported heartbeat version %d", payload[0])
	}
	n := binary.BigEndian.Uint32(payload[1:])
	b := payload[heartbeatHeaderLen:]
	if uint64(len(b)) != uint64(n)*heartbeatEntryLen {
		return dst, fmt.Errorf("rpc: heartbeat message says %d entries but holds %d bytes", n, len(b))
	}
	dst = slices.Grow(dst, int(n))
	for ; len(b) > 0; b = b[heartbeatEntryLen:] {
		dst = append(dst, Heartbeat{
			Group:  binary.BigEndian.Uint64(b),
			Term:   binary.BigEndian.Uint64(b[8:]),
			Commit: binary.BigEndian.Uint64(b[16:]),
		})
	}
	return dst, nil
}

// MaxHeartbeatsPerMessage is how many entries fit in one message under the default
// MaxFrameBytes; Flush splits a peer's entries into several messages beyond it.
const MaxHeartbeatsPerMessage = (16<<20 - batchHeaderLen - msgHeaderLen - heartbeatHeaderLen) / heartbeatEntryLen

// HeartbeatCoalescer collects the heartbeats of many groups during one tick and turns them into
// one message per destination peer. Adding the same group twice for a peer within a tick keeps
// the latest entry. It is safe for concurrent use.
type HeartbeatCoalescer struct {
	mu      sync.Mutex
	pending map[int32]*hbPending
	max     int
}

type hbPending struct {
	entries []Heartbeat
	index   map[uint64]int // group → position in entries
}

// NewHeartbeatCoalescer returns an empty coalescer. maxPerMessage bounds the entries in one
// message (0 means MaxHeartbeatsPerMessage); a peer with more entries in a tick gets several.
func NewHeartbeatCoalescer(maxPerMessage int) *HeartbeatCoalescer {
	if maxPerMessage <= 0 {
		maxPerMessage = MaxHeartbeatsPerMessage
	}
	return &HeartbeatCoalescer{pending: map[int32]*hbPending{}, max: maxPerMessage}
}

// Add records a heartbeat for peer to, to be sent at the next Flush.
func (c *HeartbeatCoalescer) Add(to int32, hb Heartbeat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[to]
	if p == nil {
		p = &hbPending{index: map[uint64]int{}}
		c.pending[to] = p
	}
	if i, ok := p.index[hb.Group]; ok {
		p.entries[i] = hb
		return
	}
	p.index[hb.Group] = len(p.entries)
	p.entries = append(p.entries, hb)
}

// Pending is the number of entries waiting for the next Flush.
func (c *HeartbeatCoalescer) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.pending {
		n += len(p.entries)
	}
	return n
}

// Flush ends the tick: it calls send once per peer that has entries (more than once only past
// the per-message bound), in ascending peer order, with a freshly allocated payload, and
// forgets the entries whatever send returns — a heartbeat lost is replaced by the next tick's.
// It returns the first error send returned. send is called without the coalescer's lock held.
func (c *HeartbeatCoalescer) Flush(send func(to int32, payload []byte) error) error {
	type out struct {
		to      int32
		payload []byte
	}
	var outs []out
	c.mu.Lock()
	for id, p := range c.pending {
		if len(p.entries) == 0 {
			// Idle for a whole tick: forget the peer's buffers.
			delete(c.pending, id)
			continue
		}
		for e := p.entries; len(e) > 0; {
			n := min(len(e), c.max)
			outs = append(outs, out{id, EncodeHeartbeats(nil, e[:n])})
			e = e[n:]
		}
		// Keep the buffers for the next tick: a steady set of groups costs no allocation but
		// the payload.
		p.entries = p.entries[:0]
		clear(p.index)
	}
	c.mu.Unlock()

	slices.SortStableFunc(outs, func(a, b out) int { return int(a.to) - int(b.to) })
	var first error
	for _, o := range outs {
		if err := send(o.to, o.payload); err != nil && first == nil {
			first = err
		}
	}
	return first
}
