// Package raftrpc adapts the multi-raft Host (internal/raft) to the inter-broker transport
// (internal/rpc): it encodes the host's outbound batches as rpc messages of one dedicated
// type, routes received ones back to the host, and tells the host when a send failed. It
// owns no raft logic (no stepping, no retries, no quorum: that is internal/raft's) and no
// network logic (no connections, framing, batching or backpressure: that is internal/rpc's).
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
// takes MsgType, raft's entry in the table of internal/rpc/types.go, for the host.
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
// A payload that does not decode exactly (bad version, truncated field, trailing bytes,
// invalid protobuf) is dropped whole. A new field of raft.Batch needs a new version.
package raftrpc
