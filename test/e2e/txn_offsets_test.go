package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnOffsetsSurviveRestart: offsets committed in an open transaction are pending
// (OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT, a plain one the offset
// committed before) and stay pending across a kill -9 of the broker, which rebuilds them
// from __consumer_offsets; the transaction's commit then makes them the group's offsets.
func TestTxnOffsetsSurviveRestart(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, group, id = "txn-offsets", "txn-offsets-g", "txn-offsets"
	createTopic(t, b.Admin(t), topic, 1, nil)
	cl := b.Client(t)
	req := func(r kmsg.Request) kmsg.Response {
		t.Helper()
		var resp kmsg.Response
		waitFor(t, 30*time.Second, func() bool {
			var err error
			resp, err = cl.Request(ctxFor(t, 10*time.Second), r)
			return err == nil && !retriable(resp)
		})
		return resp
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(id), 120_000
	ir := req(init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %d", ir.ErrorCode)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, ir.ProducerID, ir.ProducerEpoch, group
	if r := req(add).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %d", r.ErrorCode)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = id, group, ir.ProducerID, ir.ProducerEpoch, -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = topic
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 42
	ct.Partitions = append(ct.Partitions, cp)
	tc.Topics = append(tc.Topics, ct)
	if r := req(tc).(*kmsg.TxnOffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %d", r.Topics[0].Partitions[0].ErrorCode)
	}
	fetch := func(stable bool) (int64, int16) {
		t.Helper()
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Group, of.RequireStable = group, stable
		ot := kmsg.NewOffsetFetchRequestTopic()
		ot.Topic, ot.Partitions = topic, []int32{0}
		of.Topics = append(of.Topics, ot)
		r := req(of).(*kmsg.OffsetFetchResponse)
		p := r.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	check := func(when string) {
		t.Helper()
		if _, code := fetch(true); code != kerr.UnstableOffsetCommit.Code {
			t.Errorf("%s: OffsetFetch RequireStable code %d, want UNSTABLE_OFFSET_COMMIT", when, code)
		}
		if off, code := fetch(false); code != 0 || off != -1 {
			t.Errorf("%s: plain OffsetFetch %d (code %d), want -1: the offset is not committed yet", when, off, code)
		}
	}
	check("in the transaction")
	b.Kill9()
	b.Restart()
	check("after a restart")

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	if r := req(end).(*kmsg.EndTxnResponse); r.ErrorCode != 0 {
		t.Fatalf("EndTxn: %d", r.ErrorCode)
	}
	waitFor(t, 30*time.Second, func() bool {
		off, code := fetch(true)
		return code == 0 && off == 42
	})
}

// retriable reports an answer that means the coordinator is not ready yet.
func retriable(resp kmsg.Response) bool {
	code := int16(0)
	switch r := resp.(type) {
	case *kmsg.InitProducerIDResponse:
		code = r.ErrorCode
	case *kmsg.AddOffsetsToTxnResponse:
		code = r.ErrorCode
	case *kmsg.EndTxnResponse:
		code = r.ErrorCode
	case *kmsg.TxnOffsetCommitResponse:
		code = r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.OffsetFetchResponse:
		if code = r.ErrorCode; code == 0 && len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 {
			if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.UnstableOffsetCommit.Code {
				code = c
			}
		}
	}
	switch code {
	case kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.ConcurrentTransactions.Code:
		return true
	}
	return false
}
