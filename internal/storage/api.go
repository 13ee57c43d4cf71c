package storage

import (
	"errors"
	"time"
)

// EntryType distinguishes Kafka data from internal Raft entries that take no offset.
type EntryType uint8

const (
	EntryData     EntryType = 1 // Data holds one Kafka RecordBatch v2
	EntryInternal EntryType = 2 // opaque payload (empty leader entry, conf change); takes no Kafka offset
)

// Entry is one stored log entry. Index is the Raft index (dense, consecutive); Term is the
// Raft term, which is also the Kafka leader epoch of a data entry.
type Entry struct {
	Index uint64
	Term  uint64
	Type  EntryType
	// Filled in by Append for data entries (from the log's end offset and the batch header):
	BaseOffset   int64 // Kafka offset of the first record; for internal entries, the log end offset at that point
	Records      int32 // Kafka offsets this entry takes: lastOffsetDelta+1 for data, 0 for internal
	MaxTimestamp int64 // batch MaxTimestamp for data entries, -1 for internal
	Data         []byte
}

// Options configures a Log. Zero values take defaults.
type Options struct {
	FS                 FS
	Dir                string
	SegmentBytes       int64 // roll when the active segment would exceed this (default 1 GiB)
	SegmentMs          int64 // roll when the active segment's first entry is older than this (default 7 days)
	IndexIntervalBytes int   // sparse index granularity (default 4096)
	Now                func() time.Time
}

// Defaults applied to zero (or negative) Options fields.
const (
	DefaultSegmentBytes       int64 = 1 << 30
	DefaultSegmentMs          int64 = 7 * 24 * 60 * 60 * 1000
	DefaultIndexIntervalBytes       = 4096
)

var (
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	ErrCompacted        = errors.New("storage: index below the first index")
	ErrUnavailable      = errors.New("storage: index beyond the last index")
	ErrClosed           = errors.New("storage: log closed")
	ErrNotContiguous    = errors.New("storage: appended entry index is not last+1")

	// ErrCorrupt reports stored bytes that fail their CRC32C or structural checks. Open
	// returns it when even the first segment's header is unreadable; reads return it when
	// a segment trusted at Open turns out to hold a bad entry (bit rot). Nothing corrupt
	// is ever returned as data.
	ErrCorrupt = errors.New("storage: corrupt data")
	// ErrTermRegression is returned by Append for an entry whose term is lower than the
	// term before it; a Raft log's terms never decrease.
	ErrTermRegression = errors.New("storage: entry term below the previous term")
	// ErrInvalidBatch is returned by Append for a data entry that is not plausibly one
	// Kafka RecordBatch v2 (too short, inconsistent batchLength, wrong magic, negative
	// lastOffsetDelta) or an entry of unknown type. Nothing is appended.
	ErrInvalidBatch = errors.New("storage: invalid record batch")
)
