package partition

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// TestTxnWriteScript runs testdata/txnwrite/*.txt on one partition that is the sole voter of
// its group (the harness of partition_test.go): every produce and marker waits for its
// acks=all answer, so each command's output is settled. Commands:
//
//	open [segment-bytes=N]                        a fresh partition
//	produce pid=N epoch=N seq=N [records=N] [txn] Produce (plain path)
//	begin pid=N epoch=N                           BeginTxnVerification
//	produce-txn pid=N epoch=N seq=N [records=N] [guard|guard=N] [plain]
//	                                              ProduceTxn with the producer's last
//	                                              guard, a given one, or none (0); plain:
//	                                              a batch that is not transactional
//	marker pid=N epoch=N commit|abort coord=N     WriteMarker
//	restart                                       close and open the replica on its log
//	state                                         log start and end, last stable offset,
//	                                              open transactions
//	aborted from=N to=N                           AbortedTxns
//	retention                                     EnforceRetention at retention.bytes=0
//	delete-records offset=N                       DeleteRecords
func TestTxnWriteScript(t *testing.T) {
	datadriven.Walk(t, "testdata/txnwrite", func(t *testing.T, path string) {
		var h *harness
		guards := map[int64]uint64{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if h == nil && d.Cmd != "open" {
				t.Fatalf("%s: open first", d.Pos)
			}
			return runTxnWriteCommand(t, d, &h, guards)
		})
	})
}

func runTxnWriteCommand(t *testing.T, d *datadriven.TestData, hp **harness, guards map[int64]uint64) string {
	arg := func(key string, def int64) int64 {
		if !d.HasArg(key) {
			return def
		}
		var v int64
		d.ScanArgs(t, key, &v)
		return v
	}
	batch := func(txn bool) []byte {
		b := kafkatest.Plain(int(arg("records", 1)), 1000)
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = arg("pid", -1), int16(arg("epoch", -1)), int32(arg("seq", -1))
		if txn {
			b.Attributes |= recordbatch.AttrTransactional
		}
		return b.Bytes()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	await := func(res ProduceResult, wait func(context.Context) ProduceResult) ProduceResult {
		if wait != nil {
			res = wait(ctx)
		}
		return res
	}
	switch d.Cmd {
	case "open":
		cfg := defaultConfig()
		if d.HasArg("segment-bytes") {
			cfg.SegmentBytes = arg("segment-bytes", 0)
		}
		*hp = newHarness(t, cfg)
		clear(guards)
		return "ok"
	}
	h := *hp
	switch d.Cmd {
	case "produce":
		res, wait := h.p.Produce(batch(d.HasArg("txn")), -1)
		return txnAnswer(h, await(res, wait))
	case "begin":
		g, already := h.p.BeginTxnVerification(arg("pid", -1), int16(arg("epoch", -1)))
		if already {
			return "already in the transaction"
		}
		if g == 0 {
			t.Fatalf("%s: a zero guard", d.Pos)
		}
		if prev, ok := guards[arg("pid", -1)]; ok && prev == g {
			return "the guard given before"
		}
		guards[arg("pid", -1)] = g
		return "guard given"
	case "produce-txn":
		var g uint64
		if d.HasArg("guard") {
			if a, _ := d.Arg("guard"); len(a.Vals) > 0 {
				d.ScanArgs(t, "guard", &g)
			} else {
				g = guards[arg("pid", -1)]
			}
		}
		res, wait := h.p.ProduceTxn(batch(!d.HasArg("plain")), -1, g)
		return txnAnswer(h, await(res, wait))
	case "marker":
		res := h.p.WriteMarker(ctx, arg("pid", -1), int16(arg("epoch", -1)), d.HasArg("commit"), int32(arg("coord", 0)))
		return txnAnswer(h, res)
	case "restart":
		h.reopen()
		return "ok"
	case "state":
		settleApplied(t, h.p)
		b := h.p.Boundaries()
		out := fmt.Sprintf("log-start=%d log-end=%d last-visible=%d last-stable=%d", b.LogStart, b.LogEnd, b.LastVisible, h.p.LastStable())
		for _, o := range h.p.OpenTxns() {
			out += fmt.Sprintf("\nopen: pid=%d epoch=%d first=%d", o.ProducerID, o.ProducerEpoch, o.FirstOffset)
		}
		return out
	case "aborted":
		settleApplied(t, h.p)
		var out []string
		for _, a := range h.p.AbortedTxns(arg("from", 0), arg("to", 0)) {
			out = append(out, fmt.Sprintf("pid=%d first=%d last=%d", a.ProducerID, a.FirstOffset, a.LastOffset))
		}
		if len(out) == 0 {
			return "none"
		}
		return strings.Join(out, "\n")
	case "retention":
		settleApplied(t, h.p)
		cfg := h.p.Config()
		cfg.RetentionBytes = 0 // every closed segment is past retention
		h.p.SetConfig(cfg)
		if err := h.p.EnforceRetention(); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("log-start=%d", h.p.Boundaries().LogStart)
	case "delete-records":
		settleApplied(t, h.p)
		start, kerr := h.p.DeleteRecords(arg("offset", 0))
		if kerr != nil {
			return kerr.Message
		}
		return fmt.Sprintf("low watermark %d", start)
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

// txnAnswer is a produce or marker answer, with the log end after it: a refused write
// stores nothing, and a marker's retry appends nothing.
func txnAnswer(h *harness, r ProduceResult) string {
	return fmt.Sprintf("%s; log-end=%d", answer(r), h.p.Boundaries().LogEnd)
}

// settleApplied waits until the replica applied its whole log, so the transaction index
// (fed from applied entries) reflects every acknowledged write.
func settleApplied(t *testing.T, p *Partition) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.refresh()
		b := p.Boundaries()
		if p.appliedOffset() >= b.LogEnd && b.LastVisible >= b.LogEnd {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not apply its log: %+v, applied to %d", b, p.appliedOffset())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTxnStateMovesWithLeadership: the leader's knowledge of a producer's transaction is
// read from the log by whichever replica leads next. The new leader finds the
// transaction open (its batch needs no verification), and the old one, leading again,
// finds the marker the new one wrote, so the coordinator's resent marker appends nothing;
// every replica's index agrees on the last stable offset throughout.
func TestTxnStateMovesWithLeadership(t *testing.T) {
	rs := newReplicaSet(t, false)
	txnBatch := func(seq int32) []byte {
		b := kafkatest.Plain(1, 1000)
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = 4, 0, seq
		b.Attributes |= recordbatch.AttrTransactional
		return b.Bytes()
	}
	produceTxn := func(p *Partition, seq int32, guard uint64) ProduceResult {
		res, wait := p.ProduceTxn(txnBatch(seq), -1, guard)
		if res.Err != nil {
			return res
		}
		return waitResult(wait, 10*time.Second)
	}
	// moveLeader hands leadership from to to (the followers, hearing from their leader,
	// would refuse a campaign's votes).
	moveLeader := func(from, to uint64) *Partition {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if err := rs.hosts[from].TransferLeadership(1, to); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err := rs.parts[to].waitFor(ctx, func(b *Boundaries) bool { return b.IsLeader && b.Committed >= b.LogEnd })
			cancel()
			if err == nil {
				return rs.parts[to]
			}
		}
		t.Fatalf("replica %d did not take leadership from %d", to, from)
		return nil
	}
	lastStableEverywhere := func(want int64) {
		t.Helper()
		for _, id := range replicaIDs {
			waitLastStable(t, rs.parts[id], want)
		}
	}

	if res := produceAcked(rs.parts[1], kafkatest.Plain(2, 1000).Bytes(), 10*time.Second); res.Err != nil {
		t.Fatal(res.Err)
	}
	guard, already := rs.parts[1].BeginTxnVerification(4, 0)
	if already {
		t.Fatal("a transaction nothing was written for is already open")
	}
	if res := produceTxn(rs.parts[1], 0, guard); res.Err != nil || res.BaseOffset != 2 {
		t.Fatalf("verified transactional batch: %+v", res)
	}
	lastStableEverywhere(2)

	p := moveLeader(1, 2)
	if _, already := p.BeginTxnVerification(4, 0); !already {
		t.Fatal("the new leader does not know the open transaction")
	}
	if res := produceTxn(p, 1, 0); res.Err != nil {
		t.Fatalf("the transaction's next batch on the new leader: %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := p.WriteMarker(ctx, 4, 0, false, 1)
	if res.Err != nil {
		t.Fatalf("abort marker: %+v", res)
	}
	marker := res.BaseOffset
	lastStableEverywhere(marker + 1)
	for _, id := range replicaIDs {
		if got := rs.parts[id].AbortedTxns(0, marker+1); len(got) != 1 || got[0] != (AbortedTxn{ProducerID: 4, FirstOffset: 2, LastOffset: marker}) {
			t.Fatalf("replica %d: aborted %+v", id, got)
		}
	}

	p = moveLeader(2, 1)
	end := p.Boundaries().LogEnd
	if res := p.WriteMarker(ctx, 4, 0, false, 1); res.Err != nil || res.BaseOffset != marker {
		t.Fatalf("the resent marker on replica 1: %+v, want the first one's offset %d", res, marker)
	}
	if got := p.Boundaries().LogEnd; got != end {
		t.Fatalf("the resent marker moved the log end from %d to %d", end, got)
	}
	if res := p.WriteMarker(ctx, 4, 0, true, 0); res.Err != kerr.TransactionCoordinatorFenced {
		t.Fatalf("a marker from an older coordinator on replica 1: %+v", res)
	}
	if res := produceTxn(p, 2, 0); res.Err != kerr.InvalidTxnState {
		t.Fatalf("a batch after the abort, unverified: %+v", res)
	}
}
