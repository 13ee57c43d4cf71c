// Package cluster owns the forming and joining of a Cairn cluster and the controller service
// of each broker: it runs the controller Raft group (group 0) on the broker's shared
// raft.Host, applies its committed entries to a controller.State, forwards metadata
// proposals from any broker to the controller leader, and watches broker liveness (every
// broker heartbeats the controller leader, which commits liveness changes).
//
// It must never: know the Kafka wire protocol or any partition's data (it moves encoded
// controller commands and results, nothing else); decide metadata itself (validation and
// placement are internal/controller's; the proposer decides what to propose); implement
// consensus or networking (that is internal/raft's and internal/rpc's); panic on a received
// payload (garbage is dropped and counted).
//
// # Wiring
//
// A broker builds one rpc.Registry, one rpc.Transport whose Handler is the registry's
// Dispatch, and one raft.Host over the transport (raftrpc.NewHost, with raftrpc.Register on
// the registry). New registers this package's block of message types (16-31 in
// internal/rpc/types.go: MsgJoinRequest to MsgHeartbeat, and the numbers kept for later
// ones) on Options.Registry, so they reach the service from its creation: before Run sends
// anything, and so before any join or proposal response can arrive. A number of the block
// this release has no type for is refused as malformed, counted and logged. The transport
// must be started before Run, because forming a cluster dials the seeds and they dial back;
// messages of this package's types that arrive before New are dropped by the registry, and
// their senders retry.
//
// # Cluster ids
//
// Two ids are involved. The rpc handshake's cluster id (rpc.Options.ClusterID) is a name the
// operator gives the deployment (the same on every broker, "cairn" unless configured); it
// only stops brokers of different deployments from talking, and it is what probes present
// while a cluster forms, when nothing else is known yet. The Kafka cluster id is generated
// by the first controller leader (SetClusterID, 22 random base64url characters as Kafka's
// ids are) and lives in the controller state.
//
// # Forming
//
// With no seeds a broker forms a cluster of its own. With seeds (the RPC addresses of the
// founding brokers) a broker whose RPCAddr is among them is a founder: on a fresh directory
// it probes every seed for its node id (rpc.Probe) until all answer, and bootstraps group 0
// with those ids as voters, as every other founder does; the lowest id campaigns at once. The
// seed list must be the same on every founder. A broker not among the seeds joins: it asks
// the seeds (MsgJoinRequest; a follower names the leader) until the controller leader has
// added it to group 0 as a learner, and then adds group 0 bootstrapped with the
// configuration the leader sent (the founders' voters are in no log entry, so the log alone
// could not tell it), and registers. Every broker then proposes RegisterBroker with a fresh incarnation (a counter
// kept in Dir) and Run returns once that registration is applied locally. A directory
// that already holds group 0 is reopened: its committed entries are replayed into the
// state, peers are set from it, and the broker registers again with a higher incarnation.
//
// # Controller entries
//
// Group 0's log is a partition log like any other (internal/raft stores data entries as
// Kafka RecordBatch v2), so each command travels as one uncompressed RecordBatch v2 of one
// record whose value is the controller.EncodeCommand encoding. This package builds and
// parses that one shape itself; it knows nothing else of the Kafka format.
//
// # Leaving
//
// A broker leaves group 0 only when it is decommissioned: the controller leader, once the
// broker holds no partition replica, calls RemoveMember (one raft configuration change,
// for a voter or a learner; never for the leader itself, which hands its leadership on
// first), after Promote has made a live learner a voter where a voter leaves. Who leaves and when is the proposer's decision (internal/broker); this package
// only carries it out.
//
// # Limits
//
// Group 0's log is never trimmed: a restart replays it whole, and a joiner receives it
// whole (raft snapshots here carry no controller state). Joiners stay learners (until a
// decommission promotes one in a leaving voter's place), so the controller survives only
// while a majority of its voters does. A founder that comes back with an empty directory
// bootstraps again as if new, which raft does not make safe: replace a founder's disk only
// by joining a new broker (and decommissioning the old one).
package cluster
