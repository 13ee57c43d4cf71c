// Package storage owns Cairn's on-disk partition log: segments of entries, their sparse
// offset and time indexes, crash recovery, retention and truncation, all reached through
// a narrow filesystem seam (FS). It knows nothing of Kafka requests, Raft messages or
// acknowledgements: it stores entries, reports its log end and flushed boundaries, and
// makes data durable only when Flush is called. What a data entry's payload means, the
// Kafka RecordBatch v2 format (its header, CRC, records and codecs, and the rewrite of a
// batch that compaction asks for), belongs to package recordbatch; storage decides only
// which batches to check, keep or rewrite.
//
// It must never: import a package above it (raft, partition, broker, kafka); touch a file
// except through FS; serve a byte of an entry whose CRC32C this process has not checked
// (verified on reading, or computed on writing; see Reads); report a flushed boundary
// beyond what an fsync has covered; renumber a Kafka offset or a Raft index.
//
// # Files
//
// A log lives in one directory:
//
//	00000000000000000001.log         segment, named by the Raft index of its first entry (20 digits)
//	00000000000000000001.index       sparse offset index + segment summary (closed segments only)
//	00000000000000000001.timeindex   sparse time index (closed segments only)
//	00000000000000000001.log.tmp     compacted copy of a segment being written (see Compaction)
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
//	        cleaned unix ms i64 (when compaction first rewrote the segment; 0: never) |
//	        4 reserved bytes | CRC32C u32 of the first 60 bytes
//	entry:  length u32 (bytes after this field) | CRC32C u32 | index u64 | term u64 |
//	        type u8 | payload
//
// The entry CRC32C (Castagnoli) covers the length field and every byte after the CRC field
// (index, term, type, payload). A data entry's payload is exactly one Kafka RecordBatch v2,
// stored with its baseOffset and partitionLeaderEpoch fields already set, so Fetch serves
// the bytes as they are. An internal entry's payload is opaque and may be empty. A data
// entry always takes lastOffsetDelta+1 Kafka offsets, however many records its batch still
// holds after compaction (NumRecords <= lastOffsetDelta+1; 0 for an emptied batch).
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
// describe a .log of another size. A closed segment adopted from its index is not read at
// Open, so its entries count as unchecked until a read verifies them (see Reads).
//
// # Reads
//
// Copy reads (ReadBatches, Entries, and the scans behind the other read paths) re-check
// the CRC32C of each entry they return, so bit rot in a trusted closed segment is reported
// as ErrCorrupt instead of being served. File-slice reads (ReadBatchSlices, sent with
// sendfile) do not read the payloads, so they serve a byte only after this process
// checked or wrote the entry holding it. Each segment keeps a watermark, checkedTo: every
// byte before it belongs to an entry whose CRC32C this process computed (Append,
// compaction's copy) or verified (Open's entry-by-entry recovery scan, or a ReadBatches
// that read on contiguously from a position at or below it). Appends that start exactly
// at it and such copy reads advance it; truncation lowers it to the new size; a copy read
// that finds a bad entry below it lowers it to that entry. A new segment starts checked
// up to its header, as does every segment found at Open, except for what Open's recovery
// scan verified (the last segment, and closed segments without valid index files). A
// slices read whose batches end beyond the watermark returns ErrNoFileSlices, and the
// caller's ReadBatches checks them and advances it. Bytes that change after they were
// checked (a page-cache or disk fault under data already checked) are outside what the
// slices path can see, as in Kafka, where the consumer checks each batch's own CRC; copy
// reads still report them, and from then on slices do not serve them.
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
// "Well-formed" is about the batch header (length, magic, lastOffsetDelta, base offset),
// never the record count, so compacted and emptied batches recover like any other. Any
// file ending in ".tmp" is a leftover of an interrupted write and is removed.
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
// Close and Delete serialize with Flush. Compact rounds serialize with each other; a round
// reads and writes without any of the log's locks and takes the flush lock only to swap a
// compacted segment in, so it runs alongside everything else. A segment that leaves the
// log while a round reads it (retention, truncation, Reset, Close) ends the round. A
// segment's checkedTo is atomic: copy reads move it holding only the segment's ioMu
// shared, Append under mu; truncation, which lowers it, holds ioMu exclusively.
//
// # Compaction
//
// Compact (cleanup.policy compact) keeps, for every key, only its record with the highest
// offset, and removes records without a key. Only closed segments that are flushed, have
// their index files, and lie wholly below CompactOptions.UpTo (the committed offset) take
// part; the active segment never does. Each round maps every key in those segments to its
// latest offset (128-bit hashes of the keys: some 30 to 60 bytes of memory per distinct key),
// then rewrites, oldest first, each segment that has something to remove.
//
// Offsets and Raft indexes never change. A rewritten entry keeps its index, term and type;
// its batch keeps every header field (base offset, partition leader epoch, lastOffsetDelta,
// first and max timestamp, producer id, epoch, base sequence) and the surviving records
// byte for byte, compressed again with the batch's codec (and, for snappy, its framing);
// NumRecords, the length and the CRC are recomputed. A batch whose records all go stays as
// an empty batch: the 61-byte header, NumRecords 0, no codec. Empty batches are never
// dropped, so the Raft log stays dense, producer state (rebuilt from batch headers) is
// unchanged, and every segment's index, offset, term and timestamp boundaries stay as they
// were. A read at a removed offset returns the batch that held it, so the first record a
// client gets is the next surviving one. Control and transactional batches, and batches
// whose records cannot be decoded (or inflate beyond 256 MiB), are kept as they are.
//
// Tombstones (a keyed record with a null value) delete their key: older records of it go
// like any superseded record. The tombstone itself goes once it is older than
// delete.retention.ms, measured from the segment's cleaned time in its header: when
// compaction first rewrote the segment. The tombstone's own timestamp, set by the
// producer, is not used. A tombstone therefore lives at least delete.retention.ms past
// the first round after its segment closed. Because segments are rewritten oldest first
// and a round stops at its first failure, the older records of a key are gone from disk
// before any round can remove its tombstone.
//
// A segment is swapped in as follows, each step durable before the next: the compacted
// copy is written to "<base>.log.tmp" and fsynced; the old index files are removed; the
// temporary file is renamed over "<base>.log"; the new index files are written. A crash
// leaves the old or the new .log, never index files describing the other one (without
// them Open rescans the segment), and Open removes a leftover temporary file. Readers
// that were reading the old file finish on it (it stays open, unlinked), and it is closed
// after them.
//
// A round is skipped, without reading anything, when no segment in range is new, no log
// truncation happened, the retention is unchanged and no kept tombstone has become due
// since the last round. After a restart the first round reads everything again.
package storage
