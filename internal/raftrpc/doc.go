// Package raftrpc adapts the multi-raft Host (internal/raft) to the inter-broker transport
// (internal/rpc): it encodes the host's outbound batches as rpc messages of two dedicated
// types (raft traffic, and leaders' visible reports), routes received ones back to the host,
// and tells the host when a send failed. It owns no raft logic (no stepping, no retries, no
// quorum: that is internal/raft's) and no network logic (no connections, framing, batching
// or backpressure: that is internal/rpc's).
//
// It must never: keep state about groups or peers beyond counters; block the host's
// workers (Send uses the non-blocking rpc Send and reports failures instead of waiting);
// panic on a received payload (garbage is dropped and counted); import a package above
// internal/raft.
//
// # Wiring
//
// A broker wires one node as: reg := rpc.NewRegistry(logger); tr := rpc.New(opts with Handler
// reg.Dispatch); h, s := NewHost(tr, hostOptions); Register(reg, h, stats); tr.Start().
// NewHost builds the host and its Sender together, because each needs the other; Register
// takes MsgType and VisibleType, raft's entries in the table of internal/rpc/types.go, for
// the host.
//
// # Node ids
//
// Raft node ids are uint64, rpc node ids int32. The mapping is the identity on 1..MaxInt32
// (RaftID and RPCID); ids outside it are not representable and are refused.
//
// # Wire format (version 2)
//
// One raft.Batch travels as one rpc message of type MsgType (unless it exceeds the rpc
// message limit, in which case its messages are split over several). The rpc frame carries
// the CRC and the sender's authenticated id, so neither is repeated here:
//
//	payload  = version:uint8 (=2) | nmsg:uvarint | nmsg × message | nwritten:uvarint | nwritten × written |
//	           hb:uvarint (0: no HostHeartbeat; n+1: one listing n groups) | n × quiesced
//	message  = group:uvarint | len:uvarint | raftpb.Message[len]   (protobuf encoding)
//	written  = group:uvarint | term:uvarint | index:uvarint
//	quiesced = group:uvarint | term:uvarint | commit:uvarint
//
// A listing opens with internal/raft's header entry (group 2^64-1, which names no group:
// term carries the listing's generation, commit the echoed generation and the full flag;
// see internal/raft's listing.go); a broker of an earlier release skips it as an unknown
// group, so the header needed no new version.
//
// A payload that does not decode exactly (bad version, truncated field, trailing bytes,
// invalid protobuf) is dropped whole. A new field of raft.Batch needs a new version, or a
// message type of its own, as Visible has.
//
// # Visible reports (version 1)
//
// A batch's Visible (a leader's visible indexes for a follower, see internal/raft's
// visible.go) travels as a second rpc message, of type VisibleType, right after the batch's
// own: encoded in the same allocation and queued with it (rpc.Transport.SendAll), so both
// go in one frame and one write:
//
//	payload = version:uint8 (=1) | n:uvarint | n × (group:uvarint | term:uvarint | index:uvarint)
//
// A type of its own rather than a new batch version: a broker of the previous release does
// not know the type, so its registry drops and counts the reports, and the raft batches it
// does read are unchanged, during a rolling upgrade. A report lost that way, or any other,
// costs only staleness: the leader repeats it with every heartbeat while it is above the
// commit, and once the commit catches up the follower's own commit is the bound.
package raftrpc
