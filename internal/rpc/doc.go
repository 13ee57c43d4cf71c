// Package rpc owns Cairn's inter-broker transport: the connections between brokers, the
// framing of what travels on them, the batching of many small messages into one write, the
// backpressure a slow peer exerts on its senders, and the one table of message types with
// the registry that routes received messages to their owners' handlers.
//
// It moves opaque typed messages (a uint8 type and a byte payload) between node ids. It must
// never know Raft or Kafka semantics, and must never import internal/raft or any package above
// it. The packages above give the message types meaning: internal/raftrpc carries the raft
// host's batches, internal/cluster the controller service's requests, internal/broker the
// leadership lists and forwarded produces.
//
// # Shape
//
// A Transport per node listens on one address and keeps exactly one outbound connection per
// peer, dialled lazily on the first message and redialled with capped exponential backoff after
// a failure. Each peer has one writer goroutine that drains that peer's queue and writes many
// messages as one framed batch with one write call. Inbound connections are accepted, checked
// by a handshake (cluster id, sender and intended receiver node ids), and their batches are
// handed to the Handler in arrival order per sender; calls for different senders may run
// concurrently.
//
// # Message types
//
// Every message type of every package is a constant in types.go, with its owner and
// direction; nothing else hands out numbers, and the table is indexed by number so that the
// compiler refuses a number given twice. A node builds one Registry and makes its Dispatch
// the transport's Handler; each package registers its types with its handler when it is
// constructed (raftrpc.Register, cluster.New, broker.New), before or after the transport
// starts. Registering a type twice fails at once (ErrTypeTaken), as does a type outside the
// table. The table also keeps blocks of numbers for an owner's future types (internal/cluster
// has 16-31): the owner registers its whole block (RegisterBlock), so a number of the block
// that only a newer release knows reaches the owner, which refuses it visibly. A received
// message whose type has no handler, not yet or at all, is dropped and counted
// (Registry.Dropped), the first of each type is logged, and the connection stays open: every
// sender retries or repeats what it still needs.
//
// # Delivery guarantees
//
// Delivery is at most once and in order per peer while a connection lasts. Messages are
// dropped, and counted in PeerStats.Dropped, when a write to the peer fails (the whole batch in
// flight), when the peer has stayed unreachable for longer than Options.DropAfter (everything
// queued), and when the peer is removed or the transport is closed. Messages written to a
// socket just before the connection broke can also be lost without being counted: TCP accepted
// them, the peer never read them. This is acceptable because
// Raft retransmits whatever it still needs; a caller that needs more must add its own
// acknowledgements.
//
// # Backpressure
//
// Each peer's queue is bounded by Options.MaxQueueBytes of encoded message bytes, counting the
// batch being written. Send never blocks: when the bound would be exceeded it returns
// ErrBackpressure. SendWait waits for space until its context ends. A peer that stops reading
// fills its socket buffers, then the writer blocks, then the queue fills, so memory stays
// bounded by MaxQueueBytes per peer plus one batch buffer.
//
// # Wire format (version 1)
//
// Everything on a connection is a frame:
//
//	frame  = length:uint32 | crc:uint32 | body[length]      (big endian; crc = CRC32C of body)
//	body   = version:uint8 (=1) | kind:uint8 | ...
//	hello  (kind 1, dialler → listener)  = from:int32 | to:int32 | clusterLen:uint16 | cluster
//	ack    (kind 2, listener → dialler)  = status:uint8 (0 ok, 1 refused) | from:int32 |
//	                                       reasonLen:uint16 | reason
//	batch  (kind 3, dialler → listener)  = count:uint32 | count × (type:uint8 | len:uint32 | payload)
//
// A hello addressed to node 0 (ProbeNodeID) is a probe: the listener checks the cluster id as
// for any hello, acks with its own node id and closes the connection (see Probe). Node id 0 is
// therefore reserved and no node may use it.
//
// A connection carries traffic in one direction only: the dialler sends a hello, waits for an
// ack, then sends batches. A frame whose CRC does not match, whose length exceeds the
// receiver's Options.MaxFrameBytes, whose version or kind is unknown, or whose body does not
// decode exactly closes the connection; nothing in a bad batch is delivered.
//
// # TLS
//
// With Options.TLS every connection, probes included, is mutual TLS, and the TLS handshake
// completes (within HandshakeTimeout) before the hello is read: a node without a certificate
// from the cluster's CA is closed before anything it sends is decoded, and never reaches the
// Handler. A plaintext hello on a TLS listener is answered with a refusing ack that says so;
// a TLS hello on a plaintext listener likewise, which the TLS dialler reports as a peer that
// answered in plaintext. Failures are counted (Stats.InboundTLSFailures,
// PeerStats.TLSFailures) and logged at most once per five seconds.
//
// # Heartbeats
//
// heartbeat.go holds a coalescer of per-group heartbeats into one message per peer and tick.
// Nothing uses it at present: the raft host sends each peer host one HostHeartbeat per tick
// of its own (internal/raft/quiesce.go), inside the raft batch that internal/raftrpc carries.
// Leaders' visible reports (internal/raft/visible.go) go as messages of their own type beside
// those batches, not inside them.
package rpc
