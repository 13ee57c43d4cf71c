// Package storage owns Cairn's on-disk partition log: segments of entries, their sparse
// offset and time indexes, crash recovery, retention and truncation, all reached through
// a narrow filesystem seam (FS). It knows nothing of Kafka requests, Raft messages or
// acknowledgements: it stores entries, reports its log end and flushed boundaries, and
// makes data durable only when Flush is called.
package storage

// THIS FILE IS A TEMPORARY STUB describing the API; the storage implementer replaces it.

import (
	"errors"
	"os"
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

var (
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	ErrCompacted        = errors.New("storage: index below the first index")
	ErrUnavailable      = errors.New("storage: index beyond the last index")
	ErrClosed           = errors.New("storage: log closed")
	ErrNotContiguous    = errors.New("storage: appended entry index is not last+1")
)

type Log struct{}

func Open(opts Options) (*Log, error)       { return nil, errors.New("storage: not implemented") }
func (l *Log) Append(entries []Entry) error { return nil }
func (l *Log) Flush() error                 { return nil }
func (l *Log) FirstIndex() uint64           { return 0 }
func (l *Log) LastIndex() uint64            { return 0 }
func (l *Log) FlushedIndex() uint64         { return 0 }
func (l *Log) LastTerm() uint64             { return 0 }
func (l *Log) LogStartOffset() int64        { return 0 }
func (l *Log) LogEndOffset() int64          { return 0 }
func (l *Log) FlushedOffset() int64         { return 0 }
func (l *Log) SizeBytes() int64             { return 0 }
func (l *Log) UnflushedBytes() int64        { return 0 }
func (l *Log) ReadBatches(offset int64, maxBytes int, upTo int64) ([]byte, error) {
	return nil, nil
}
func (l *Log) Entries(lo, hi uint64, maxBytes uint64) ([]Entry, error) { return nil, nil }
func (l *Log) Term(index uint64) (uint64, error)                       { return 0, nil }
func (l *Log) TruncateSuffix(fromIndex uint64) error                   { return nil }
func (l *Log) AdvanceLogStart(offset int64) error                      { return nil }
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	return 0, 0, false
}
func (l *Log) MaxTimestamp() (timestamp int64, offset int64) { return -1, -1 }
func (l *Log) EpochEndOffset(epoch uint64) (foundEpoch uint64, endOffset int64, ok bool) {
	return 0, 0, false
}
func (l *Log) ScanBatches(fn func(baseOffset int64, batch []byte) error) error { return nil }
func (l *Log) SetOptions(segmentBytes, segmentMs int64)                        {}
func (l *Log) EnforceRetention(retentionMs, retentionBytes int64) (int64, error) {
	return 0, nil
}
func (l *Log) Close() error  { return nil }
func (l *Log) Delete() error { return nil }

// FS is the filesystem seam.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(name string, perm os.FileMode) error
	ReadDir(name string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	SyncDir(name string) error
}

type File interface {
	ReadAt(p []byte, off int64) (int, error)
	Write(p []byte) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
}

func OSFS() FS { return nil }
