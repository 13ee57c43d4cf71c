// Package raft is Cairn's multi-raft host on go.etcd.io/raft/v3: the bridge between etcd
// raft and the partition log (DESIGN.md §1–§2). It owns
//
//   - the storage adapter: LogStorage, a raft.Storage over a storage.Log, with the
//     persisted HardState and ConfState (logstorage.go, state.go, cache.go);
//   - the Host, which drives every group's RawNode of one broker on a fixed pool of worker
//     and flusher goroutines and one ticker (host.go: types and Step; group.go: a replica's
//     lifecycle and state; proposal.go and control.go: the calls into a group; schedule.go:
//     the queues, workers and ticker; ready.go: ready handling and applying; flush.go:
//     group commit and write caching; outbox.go: per-peer batching of outbound traffic;
//     visible.go: a leader's visible index told to its followers; campaign.go: the switch
//     that keeps a host in maintenance from winning elections, and the join gate that
//     keeps a replica added by a move from campaigning or voting until it has replayed
//     the log to where it was added; status.go);
//   - the written-index tracking behind the majority-replicated boundary, whose rule is
//     pure functions (majority.go), and the coalesced heartbeats and quiescence of idle
//     groups (quiesce.go);
//   - the membership-change planner (reconfig.go, DESIGN.md §8): pure, it names the next
//     configuration change or leadership transfer from a leader's Status; executing it,
//     and recording a move anywhere, belongs to the layers above; and the pacing of
//     learners' catch-up traffic (pacer.go, HostOptions.LearnerRate).
//
// Scripts in testdata/ (datadriven format, run by script_test.go) step a set of hosts
// deterministically: no goroutines, a manual clock, and a network and fsyncs the script
// controls. The driver is package rafttest, so that the packages above can script their
// own scenarios on it; it drives DrivenHosts (driven.go), which run the started host's
// rounds when their caller says so, and exist for such tests only.
//
// host.go documents the write path, why raft's commit index is flush-aware there, and the
// majority-replicated boundary. The inter-broker transport is not here: raftrpc carries a
// Host's Batches over rpc.
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
// Beside the segments, in the log's directory, the file "raft.state" holds the HardState
// as of its last write, the last installed snapshot's position (index, term, next Kafka
// offset), the history of applied ConfStates by index (pruned to what the log's prefix
// boundary still needs) and, for a joining replica, its join gate (campaign.go). It is
// replaced atomically through storage.FS (temp file, fsync, rename, directory fsync) when
// any of those but the HardState changes, and carries a CRC32C; a torn or corrupt file is
// an error on Open, never an empty state. See encodeState for the layout. The HardState's
// own changes (a new term, a vote, an eager commit) go to "raft.vote", overwritten in
// place with one fdatasync (votefile.go); Open takes the newer of the two. The commit
// index is written lazily, except when it covers a configuration change not yet applied.
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
// transferred; they are gone on the leader too. A replica added after the boundary is not
// in the snapshot's ConfState, so it takes the snapshot as a learner of it (admitSnapshot):
// the entries after the boundary add it.
//
// # Bootstrap and joining
//
// A partition group (GroupConfig.BootstrapInLog) writes its initial configuration as the
// log's first entries, one ConfChange per member at term 1, as etcd raft's own bootstrap
// does; a replica added later (GroupConfig.Bootstrap nil, empty storage) starts with an
// empty configuration and learns every one from the leader's log or snapshot. It never
// bootstraps itself with the initial voters: fresh replicas that believed that could
// elect one of their own beside the real group. Groups created by an earlier release hold
// their initial configuration at index 0 instead, outside the log: Host.JoinableLog says
// whether a new replica could still rebuild it. The controller group keeps that scheme.
package raft
