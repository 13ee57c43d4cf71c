package cluster

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// errBadEntry reports a group-0 data entry that is not the one-record batch encodeEntry
// writes. Every replica holds the same bytes, so every replica refuses it the same way.
var errBadEntry = errors.New("cluster: malformed controller entry")

// entryRecord is the one record of a controller entry carrying cmd: no key, no headers.
func entryRecord(cmd []byte) recordbatch.NewRecord {
	if cmd == nil {
		cmd = []byte{} // an empty command, not a null value
	}
	return recordbatch.NewRecord{Value: cmd}
}

// encodeEntry wraps an encoded controller command as an uncompressed RecordBatch v2 holding
// one record (no key, no headers) whose value is cmd; ts is its timestamp (unix ms). The
// storage layer sets baseOffset and partitionLeaderEpoch, which the CRC does not cover.
func encodeEntry(cmd []byte, ts int64) []byte {
	return recordbatch.Encode(recordbatch.PlainHeader(ts, ts), []recordbatch.NewRecord{entryRecord(cmd)})
}

// decodeEntry returns the command a group-0 data entry carries. It accepts exactly the
// shape encodeEntry writes (any base offset, epoch and timestamps) and never panics.
func decodeEntry(b []byte) ([]byte, error) {
	bad := func(format string, args ...any) ([]byte, error) {
		return nil, fmt.Errorf("%w: %s", errBadEntry, fmt.Sprintf(format, args...))
	}
	if err := recordbatch.Check(b); err != nil {
		return bad("%v", err)
	}
	h, _ := recordbatch.ParseHeader(b)
	switch {
	case !recordbatch.CRCValid(b):
		return bad("crc mismatch")
	case h.Attributes != 0:
		return bad("attributes %#x", h.Attributes)
	case h.LastOffsetDelta != 0 || h.NumRecords != 1:
		return bad("not one record")
	}
	recs, _, err := recordbatch.DecodeRecords(b, nil)
	if err != nil {
		return bad("%v", err)
	}
	r := recs[0]
	// The record must be the very bytes encodeEntry writes for its value: attributes,
	// timestamp and offset deltas 0, a null key, no headers.
	if r.Tombstone || !bytes.Equal(r.Raw, recordbatch.AppendRecord(nil, 0, entryRecord(r.Value))) {
		return bad("not the record a controller entry holds")
	}
	return r.Value, nil
}
