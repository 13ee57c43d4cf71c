// Package history records the operations of a Kafka workload run against Cairn under faults,
// and checks them against Cairn's durability contract (docs/durability.md, issue 5 §3-4).
//
// It owns three things: the history model (Op, Record, the kinds and phases), a
// concurrency-safe Recorder that appends operations as JSON lines to a file (bounded memory:
// only in-flight invocations are held) with a loader for it, and the Checker that turns a
// history plus a final full read of each partition into a Summary and a bounded list of
// violations. kgo.go adapts franz-go values (kgo.Record, produce promises, kgo.Fetches) into
// operations, and kgo_txn.go does the same for transactions (EndTransaction's outcome, fetches
// with their last stable offset); txn.go holds the transaction rules of mode txn.
//
// It must not do anything else: no processes, no network, no fault injection and no
// workload loop. Those belong to test/chaos and test/chaos/faults, which call into this
// package. The checker must stay a pure function of the history, the final read and the
// Options, so that a kept history can be checked again offline.
//
// # Definite failure
//
// A produce whose completion has phase Fail and Definite set is a definite failure: its
// value must never appear in any read. Definite is set only when the error proves that no
// attempt of the record was stored. With idempotent retries a record may be sent several
// times, and the final error describes only the last attempt: an earlier attempt that got
// NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT may have been stored and committed, so a final
// NOT_ENOUGH_REPLICAS, a delivery timeout, a retry limit or a closed client is NOT definite.
// DefiniteProduceError therefore accepts only errors that are decided by the record or the
// request itself, and so would be the answer to every attempt, and that the contract says
// store nothing: MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_REQUIRED_ACKS,
// UNSUPPORTED_FOR_MESSAGE_FORMAT, INVALID_RECORD, INVALID_TOPIC_EXCEPTION, and the
// client-side kgo.ErrMaxBuffered (the record was never buffered). Every other failure, and
// phase Unknown, is indeterminate: the value may or may not appear, once.
package history
