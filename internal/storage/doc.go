// Package storage owns Cairn's on-disk partition log: segments of entries, their sparse
// offset and time indexes, crash recovery, retention and truncation, all reached through
// a narrow filesystem seam (FS). It knows nothing of Kafka requests, Raft messages or
// acknowledgements: it stores entries, reports its log end and flushed boundaries, and
// makes data durable only when Flush is called.
//
// It must never: import a package above it (raft, partition, broker, kafka); touch a file
// except through FS; serve a byte whose CRC32C it has not checked; report a flushed
// boundary beyond what an fsync has covered; renumber a Kafka offset.
//
// # Files
//
// A log lives in one directory:
//
//	00000000000000000001.log         segment, named by the Raft index of its first entry (20 digits)
//	00000000000000000001.index       sparse offset index + segment summary (closed segments only)
//	00000000000000000001.timeindex   sparse time index (closed segments only)
//	log-start-offset.checkpoint      persisted log start offset (DeleteRecords)
//
// Segments are named by first Raft index rather than by base offset because internal
// entries take no offset, so several segments may share a base offset but never a first
// index; an empty segment still has a well-defined name.
//
// # Segment file
//
// A 64-byte header, then entries back to back. All integers are big-endian.
//
//	header: magic "CAIRNSEG" | version u32 (=1) | header size u32 (=64) | base index u64 |
//	        base offset i64 | prev term u64 (term of entry base index-1) | created unix ms i64 |
//	        12 reserved bytes | CRC32C u32 of the first 60 bytes
//	entry:  length u32 (bytes after this field) | CRC32C u32 | index u64 | term u64 |
//	        type u8 | payload
//
// The entry CRC32C (Castagnoli) covers the length field and every byte after the CRC field
// (index, term, type, payload). A data entry's payload is exactly one Kafka RecordBatch v2,
// stored with its baseOffset and partitionLeaderEpoch fields already set, so Fetch serves
// the bytes as they are. An internal entry's payload is opaque and may be empty.
//
// Because the header carries the base index, base offset and previous term, an empty
// segment (a fresh log, or one truncated to nothing) fully describes where the log stands.
//
// # Index files
//
// Offset index: one entry per IndexIntervalBytes of appended data, (offset - base offset
// u32, index - base index u32, file position u32). Time index: at each offset-index point
// where the segment's largest timestamp has grown, (largest timestamp so far i64, offset of
// the last record of the batch holding it - base offset u32, position of the index point
// u32). Both files start with a magic, a count, the size of the .log they describe and end
// with a CRC32C; the .index file also carries the segment summary (last index, last term,
// end offset, largest timestamp, term changes within the segment).
//
// The indexes are kept in memory (12 bytes per offset entry, 16 per time entry) and written
// to disk only for closed segments, by the first Flush after the segment's own data has been
// fsynced. An index file therefore exists only if its segment was durable when it was
// written. On Open the last segment is always rescanned entry by entry (CRC checked); a
// closed segment is rescanned only if its index files are missing, fail their CRC, or
// describe a .log of another size. Every read re-checks the CRC32C of each entry it returns,
// so bit rot in a trusted closed segment is reported as ErrCorrupt instead of being served.
//
// # Log start checkpoint
//
// log-start-offset.checkpoint holds magic "CAIRNLSO" | version u32 | log start offset i64 |
// CRC32C u32. It is replaced atomically (temp file, fsync, rename, directory fsync) before
// any segment below the new log start is removed, so Open can finish an interrupted
// deletion: segments wholly below it are removed, and the log start is the larger of the
// checkpoint and the first segment's base offset.
//
// # Recovery
//
// Open keeps the longest valid prefix: the first entry that is torn, fails its CRC, breaks
// the index sequence, lowers the term, or is not a well-formed RecordBatch v2 at the expected
// offset ends the log; the file is truncated there and every later segment is removed.
// Everything that survives is fsynced before Open returns, so FlushedIndex = LastIndex.
//
// A stored entry that fails its CRC32C in a closed segment that Open trusted (bit rot) is
// reported as ErrCorrupt by any read that has to pass over it; the batches before it are
// still served. Repair is the caller's business (re-replicate, or Reset from a snapshot).
//
// # Concurrency
//
// Append is serialized by the caller (an internal mutex enforces it). Reads, Flush and the
// getters may run concurrently with Append. Flush does its fsyncs without holding the
// log's main lock (group commit). TruncateSuffix, AdvanceLogStart, EnforceRetention, Reset,
// Close and Delete serialize with Flush.
package storage
