// Package controller owns the cluster metadata state machine that the controller Raft group
// (group 0) replicates: brokers with their addresses, racks, incarnations and liveness;
// topics with their ids, partition assignments, config overrides and the record of each
// partition move in progress (reassign.go); cluster config overrides; producer-id blocks;
// the SCRAM users' credentials (users.go: keys and salts, never a password); the Kafka
// ACLs (acls.go);
// and the cluster id. It also owns replica placement, as pure
// functions (Place).
//
// It must never do I/O, networking, timers or Raft itself. A State is a deterministic
// machine fed committed commands (Apply) in log order; every replica that applies the same
// commands holds byte-identical snapshots. Commands and snapshots have a versioned JSON
// encoding whose decoders reject garbage with an error and never panic. Config values are
// opaque here: the proposer validates them against internal/config before proposing.
// Liveness is decided by the controller leader outside the state machine (it watches
// heartbeats) and only changes of liveness are committed, so that apply needs no clock.
package controller
