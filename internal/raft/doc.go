// Package raft is Cairn's multi-raft host on go.etcd.io/raft/v3. It owns the bridge between
// etcd raft and the partition log: today the storage adapter (LogStorage, a raft.Storage
// over a storage.Log, with the persisted HardState and ConfState); later the scheduler that
// drives every group's RawNode, the inter-broker transport with coalesced heartbeats, and
// the written-index tracking that feeds the majority-replicated boundary (DESIGN.md §1–§2).
//
// The multi-raft Host (host.go) runs every group of one broker on a fixed pool of worker
// and flusher goroutines and one ticker; see its documentation for the write path, why
// raft's commit index is flush-aware there, and the majority-replicated boundary.
//
// It must never: know Kafka semantics (no kmsg, no partitions, acks, offsets beyond
// carrying the ones storage assigns); keep a second copy of log data (the Raft log is the
// partition log); touch a file except through storage (storage.Log and storage.FS);
// implement consensus itself (that is etcd raft's job); import a package above it
// (partition, broker, kafka, controller, group).
//
// # Entry encoding
//
// A raftpb.Entry maps to one storage.Entry with the same Index and Term:
//
//   - EntryNormal with non-empty Data is a data entry (storage.EntryData). Data must be
//     exactly one Kafka RecordBatch v2; it is stored as it is, except that storage sets its
//     baseOffset and partitionLeaderEpoch fields (neither is covered by the batch CRC), so
//     Entries returns the batch as stored. It takes lastOffsetDelta+1 Kafka offsets.
//   - Everything else (EntryNormal with empty Data, such as a new leader's entry;
//     EntryConfChange; EntryConfChangeV2) is internal (storage.EntryInternal) and takes no
//     Kafka offset. Its payload is a 1-byte tag, the raftpb.EntryType, followed by Data.
//
// Kafka offsets are therefore a function of the sequence of entries alone, identical on
// every replica that holds the same log prefix.
//
// # Persisted state
//
// Beside the segments, in the log's directory, the file "raft.state" holds the HardState,
// the last installed snapshot's position (index, term, next Kafka offset) and the history
// of applied ConfStates by index (pruned to what the log's prefix boundary still needs).
// It is replaced atomically through storage.FS (temp file, fsync, rename, directory fsync)
// and carries a CRC32C; a torn or corrupt file is an error on Open, never an empty state.
// See encodeState for the layout.
//
// # Snapshots
//
// The partition log is the state machine's state, so a snapshot carries no data beyond
// its metadata: Snapshot describes the log's prefix boundary (index FirstIndex-1, its term,
// the ConfState in force there) and, in Snapshot.Data, the Kafka offset the entry at
// FirstIndex starts at (see SnapshotData). A follower that is sent one (because the leader
// no longer holds the entries it needs, after retention) installs it with ApplySnapshot:
// its log is Reset to start right after the snapshot index, at that Kafka offset, and the
// leader then sends it every entry from there on. Records below the boundary are not
// transferred; they are gone on the leader too.
package raft
