package partition

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// TestTxnIndexScript runs testdata/txnindex/index.txt: batches as the log holds them (plain,
// idempotent, transactional, and commit or abort markers) are read into one index, and the
// script prints what read_committed would be told: the last stable offset and the aborted
// transactions overlapping a fetched range.
//
//	batch at=N [records=N] [pid=N epoch=N] [txn]   a data batch
//	marker at=N pid=N epoch=N commit|abort        a control batch
//	garbage at=N                                  bytes that are no batch
//	lso visible=N
//	aborted from=N to=N
//	open
//	trim start=N
func TestTxnIndexScript(t *testing.T) {
	var x *txnIndex
	datadriven.RunTest(t, "testdata/txnindex/index.txt", func(t *testing.T, d *datadriven.TestData) string {
		return runTxnIndexCommand(t, d, &x)
	})
}

func runTxnIndexCommand(t *testing.T, d *datadriven.TestData, index **txnIndex) string {
	arg := func(key string, def int64) int64 {
		if !d.HasArg(key) {
			return def
		}
		var v int64
		d.ScanArgs(t, key, &v)
		return v
	}
	if *index == nil || d.Cmd == "reset" {
		*index = newTxnIndex(arg("from", 0))
		if d.Cmd == "reset" {
			return "ok"
		}
	}
	x := *index
	h := recordbatch.PlainHeader(1, 1)
	h.ProducerID, h.ProducerEpoch = arg("pid", -1), int16(arg("epoch", -1))
	at := arg("at", 0)
	switch d.Cmd {
	case "batch":
		n := arg("records", 1)
		if d.HasArg("pid") {
			h.BaseSequence = 0
		}
		if d.HasArg("txn") {
			h.Attributes |= recordbatch.AttrTransactional
		}
		recs := make([]recordbatch.NewRecord, n)
		for i := range recs {
			recs[i] = recordbatch.NewRecord{Key: []byte("k"), TimestampDelta: int64(i)}
		}
		x.add(at, recordbatch.Encode(h, recs))
	case "marker":
		typ := recordbatch.ControlCommit
		if d.HasArg("abort") {
			typ = recordbatch.ControlAbort
		}
		x.add(at, recordbatch.EncodeControl(h, typ, 0))
	case "garbage":
		x.add(at, []byte("not a batch"))
	case "lso":
		return fmt.Sprint(x.lastStable(arg("visible", 0)))
	case "aborted":
		var b strings.Builder
		for _, a := range x.abortedIn(arg("from", 0), arg("to", 0)) {
			fmt.Fprintf(&b, "pid=%d first=%d last=%d\n", a.ProducerID, a.FirstOffset, a.LastOffset)
		}
		if b.Len() == 0 {
			return "none"
		}
		return b.String()
	case "open":
		var b strings.Builder
		for _, o := range x.openTxns() {
			fmt.Fprintf(&b, "pid=%d epoch=%d first=%d\n", o.ProducerID, o.ProducerEpoch, o.FirstOffset)
		}
		if b.Len() == 0 {
			return "none"
		}
		return b.String()
	case "trim":
		x.trim(arg("start", 0))
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return fmt.Sprintf("read to %d", x.readTo)
}
