package rpc

import (
	"slices"
	"sync/atomic"
)

// peerCounters are the outbound counters of one peer, guarded by peer.mu.
type peerCounters struct {
	msgsSent, bytesSent, batchesSent uint64
	dropped, backpressured           uint64
	connects, reconnects             uint64
	dialFailures                     uint64
	tlsFailures                      uint64
}

// recvCounters are the inbound counters of one sender.
type recvCounters struct {
	msgs, bytes, batches atomic.Uint64
}

type transportCounters struct {
	rejected    atomic.Uint64
	frameErrors atomic.Uint64
	probes      atomic.Uint64
	tlsFailures atomic.Uint64
}

// PeerStats is a snapshot of the counters for one node. Sent counters exist for configured
// peers; received counters for any node that has sent to this one.
type PeerStats struct {
	ID        int32
	Addr      string // empty for a sender that is not a configured peer
	Connected bool   // an outbound connection is open

	MessagesSent uint64
	BytesSent    uint64 // frame bytes written, headers included
	BatchesSent  uint64

	MessagesReceived uint64
	BytesReceived    uint64 // frame bytes read, headers included
	BatchesReceived  uint64

	// Dropped counts messages discarded: in a batch whose write failed, queued while the peer
	// stayed unreachable past DropAfter, or queued when the peer was removed. Messages lost
	// inside a connection that broke after they were written are not counted here.
	Dropped uint64
	// Backpressured counts Send calls refused with ErrBackpressure.
	Backpressured uint64
	Connects      uint64 // successful handshakes
	Reconnects    uint64 // successful handshakes after the first
	DialFailures  uint64 // failed dials and handshakes
	// TLSFailures counts dials whose TLS handshake failed (also in DialFailures): the peer's
	// certificate is not the cluster CA's, or it refused ours, or it has TLS off.
	TLSFailures uint64

	QueuedMessages uint64
	QueuedBytes    uint64 // encoded bytes, including the batch being written
}

// Stats is a snapshot of a transport's counters, for the admin package to export.
type Stats struct {
	Peers []PeerStats // sorted by ID
	// InboundRejected counts inbound connections refused at the handshake: garbage, another
	// cluster, or addressed to another node.
	InboundRejected uint64
	// InboundFrameErrors counts inbound connections closed for a corrupt or oversized frame.
	InboundFrameErrors uint64
	// ProbesAnswered counts probe handshakes (see Probe) this node answered.
	ProbesAnswered uint64
	// InboundTLSFailures counts inbound connections closed because their TLS handshake
	// failed: no certificate, one the cluster CA did not sign, a plaintext dialler, garbage,
	// or nothing at all within HandshakeTimeout.
	InboundTLSFailures uint64
}

// Stats returns a snapshot of the counters.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	peers := make([]*peer, 0, len(t.peers))
	for _, p := range t.peers {
		peers = append(peers, p)
	}
	recv := make(map[int32]*recvCounters, len(t.received))
	for id, r := range t.received {
		recv[id] = r
	}
	t.mu.Unlock()

	byID := map[int32]*PeerStats{}
	get := func(id int32) *PeerStats {
		if s, ok := byID[id]; ok {
			return s
		}
		s := &PeerStats{ID: id}
		byID[id] = s
		return s
	}
	for _, p := range peers {
		s := get(p.id)
		p.mu.Lock()
		c := p.counters
		s.Addr = p.addr
		s.Connected = p.conn != nil
		s.QueuedMessages = uint64(len(p.q))
		s.QueuedBytes = uint64(p.qBytes)
		p.mu.Unlock()
		s.MessagesSent, s.BytesSent, s.BatchesSent = c.msgsSent, c.bytesSent, c.batchesSent
		s.Dropped, s.Backpressured = c.dropped, c.backpressured
		s.Connects, s.Reconnects, s.DialFailures = c.connects, c.reconnects, c.dialFailures
		s.TLSFailures = c.tlsFailures
	}
	for id, r := range recv {
		s := get(id)
		s.MessagesReceived, s.BytesReceived, s.BatchesReceived = r.msgs.Load(), r.bytes.Load(), r.batches.Load()
	}
	out := Stats{
		InboundRejected:    t.counters.rejected.Load(),
		InboundFrameErrors: t.counters.frameErrors.Load(),
		ProbesAnswered:     t.counters.probes.Load(),
		InboundTLSFailures: t.counters.tlsFailures.Load(),
	}
	for _, s := range byID {
		out.Peers = append(out.Peers, *s)
	}
	slices.SortFunc(out.Peers, func(a, b PeerStats) int { return int(a.ID) - int(b.ID) })
	return out
}

// Peer returns the snapshot for one node, and whether there is one.
func (s Stats) Peer(id int32) (PeerStats, bool) {
	for _, p := range s.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return PeerStats{}, false
}
