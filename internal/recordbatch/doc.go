// Package recordbatch is the one place that knows Kafka's RecordBatch v2 format: the byte
// positions of the header fields, the CRC32C that covers a batch, the header parse, the walk
// over a batch's varint-encoded records, the compression codecs, and the one encoder for
// plain and control batches.
//
// It owns the format and nothing else. It does no I/O, keeps no state beyond the codecs'
// reusable coder pools, and knows nothing of storage entries, Raft, partitions or Kafka error
// codes: it reports what is wrong with a batch (errors matching ErrMalformed, or ErrNullKey),
// and the layer that received the batch decides what to answer. It imports only the standard
// library and the codec libraries, so that every layer, from storage up to the command line
// and the tests, may use it.
//
// The layout (Kafka protocol, big-endian):
//
//	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 (=2) |
//	crc uint32 | attributes int16 | lastOffsetDelta int32 | firstTimestamp int64 |
//	maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
//	recordCount int32 | records
//
// batchLength counts the bytes after itself. The CRC32C (Castagnoli) covers every byte from
// attributes to the end, so a broker may set baseOffset and partitionLeaderEpoch without
// recomputing it. Attributes bits 0-2 name the codec of the records section, bit 3 log-append
// time, bit 4 a transactional batch and bit 5 a control batch.
package recordbatch
