package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Bad input to the transaction requests: each gets Kafka's error code and stores nothing.

// txnBroker starts a broker with a topic and a client for raw requests.
func txnBroker(t *testing.T, topic string) *kgo.Client {
	t.Helper()
	_, _, addr := serveTestBroker(t, nil, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 2, 1
	ct.Topics = append(ct.Topics, rt)
	if resp, err := ct.RequestWith(testCtx(t), direct(cl)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating %s: %v %+v", topic, err, resp)
	}
	return cl
}

// initTxn runs InitProducerId for id until its coordinator has loaded, and returns the
// answer.
func initTxn(t *testing.T, cl *kgo.Client, id string, timeoutMs int32) *kmsg.InitProducerIDResponse {
	t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
	var resp *kmsg.InitProducerIDResponse
	waitUntil(t, "the transaction coordinator of "+id+" to load", 30*time.Second, func() bool {
		if _, err := fc.RequestWith(testCtx(t), direct(cl)); err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr(id), timeoutMs, -1, -1
		var err error
		if resp, err = req.RequestWith(testCtx(t), direct(cl)); err != nil {
			t.Fatal(err)
		}
		return !coordinatorLoading(resp.ErrorCode)
	})
	return resp
}

// coordinatorLoading reports a code that means the coordinator is not ready yet.
func coordinatorLoading(code int16) bool {
	return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code
}

func describeTxn(t *testing.T, cl *kgo.Client, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(testCtx(t), direct(cl))
	if err != nil || len(resp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions %s: %v %+v", id, err, resp)
	}
	return resp.TransactionStates[0]
}

func TestTxnRequestsBadInput(t *testing.T) {
	const topic = "txn-bad"
	cl := txnBroker(t, topic)
	ctx := testCtx(t)

	for _, timeout := range []int32{900_001, 0, -5} {
		if resp := initTxn(t, cl, "bad-timeout", timeout); resp.ErrorCode != kerr.InvalidTransactionTimeout.Code || resp.ProducerID != -1 {
			t.Errorf("InitProducerId with timeout %d: code %d id %d, want INVALID_TRANSACTION_TIMEOUT", timeout, resp.ErrorCode, resp.ProducerID)
		}
	}
	if st := describeTxn(t, cl, "bad-timeout"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("an id whose InitProducerId was refused is known: %+v", st)
	}
	empty := kmsg.NewPtrInitProducerIDRequest()
	empty.TransactionalID, empty.TransactionTimeoutMillis = kmsg.StringPtr(""), 1000
	if resp, err := empty.RequestWith(ctx, direct(cl)); err != nil || resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("InitProducerId with an empty transactional id: %v %+v, want INVALID_REQUEST", err, resp)
	}

	init := initTxn(t, cl, "bad", 60_000)
	if init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: code %d", init.ErrorCode)
	}
	pid, epoch := init.ProducerID, init.ProducerEpoch

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "bad", pid, epoch, true
	if resp, err := end.RequestWith(ctx, direct(cl)); err != nil || resp.ErrorCode != kerr.InvalidTxnState.Code {
		t.Errorf("EndTxn without a transaction: %v %+v, want INVALID_TXN_STATE", err, resp)
	}

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "bad", pid, epoch
	for _, name := range []string{"no-such-topic", topic} {
		at := kmsg.NewAddPartitionsToTxnRequestTopic()
		at.Topic, at.Partitions = name, []int32{0}
		add.Topics = append(add.Topics, at)
	}
	resp, err := add.RequestWith(ctx, direct(cl))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if codes["no-such-topic"] != kerr.UnknownTopicOrPartition.Code || codes[topic] != kerr.OperationNotAttempted.Code {
		t.Errorf("AddPartitionsToTxn with an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION and OPERATION_NOT_ATTEMPTED", codes)
	}
	if st := describeTxn(t, cl, "bad"); st.ErrorCode != 0 || st.State != "Empty" || len(st.Topics) != 0 {
		t.Errorf("after a refused AddPartitionsToTxn: %+v, want Empty with no partitions", st)
	}

	// A transactional batch for a partition never added: refused, nothing stored.
	produce := func(seq int32) int16 {
		h := recordbatch.PlainHeader(1, 1)
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
		h.Attributes |= recordbatch.AttrTransactional
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr("bad"), -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 1, recordbatch.Encode(h, []recordbatch.NewRecord{{Value: []byte("x")}})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, direct(cl))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(0); code != kerr.InvalidTxnState.Code {
		t.Errorf("a transactional produce to a partition never added: code %d, want INVALID_TXN_STATE", code)
	}
	if code := produce(-1); code != kerr.InvalidRecord.Code {
		t.Errorf("a transactional batch without a sequence from a client: code %d, want INVALID_RECORD", code)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = 1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if resp, err := lo.RequestWith(ctx, direct(cl)); err != nil || resp.Topics[0].Partitions[0].Offset != 0 {
		t.Errorf("the refused batches were stored: %v %+v", err, resp)
	}

	// A second InitProducerId fences the first epoch: its TxnOffsetCommit is refused and
	// no offset is committed.
	if again := initTxn(t, cl, "bad", 60_000); again.ErrorCode != 0 || again.ProducerEpoch != epoch+1 {
		t.Fatalf("second InitProducerId: %+v, want epoch %d", again, epoch+1)
	}
	{
		tc := kmsg.NewPtrTxnOffsetCommitRequest()
		tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = "bad", "bad-group", pid, epoch, -1
		ct := kmsg.NewTxnOffsetCommitRequestTopic()
		ct.Topic = topic
		cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = 0, 7
		ct.Partitions = append(ct.Partitions, cp)
		tc.Topics = append(tc.Topics, ct)
		want := kerr.ProducerFenced
		var code int16
		waitUntil(t, "the group coordinator", 30*time.Second, func() bool {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKeys = []string{"bad-group"}
			if _, err := fc.RequestWith(testCtx(t), direct(cl)); err != nil {
				t.Fatal(err)
			}
			resp, err := tc.RequestWith(testCtx(t), direct(cl))
			if err != nil {
				t.Fatal(err)
			}
			code = resp.Topics[0].Partitions[0].ErrorCode
			return !coordinatorLoading(code)
		})
		if code != want.Code {
			t.Errorf("TxnOffsetCommit from a fenced epoch: code %d, want %s", code, want.Message)
		}
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "bad-group"
	if resp, err := of.RequestWith(ctx, direct(cl)); err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Errorf("a fenced TxnOffsetCommit left offsets: %v %+v", err, resp)
	}
	if st := describeTxn(t, cl, "nobody"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("DescribeTransactions of an unknown id: code %d, want TRANSACTIONAL_ID_NOT_FOUND", st.ErrorCode)
	}
}

// Versions from before PRODUCER_FENCED existed are told INVALID_PRODUCER_EPOCH instead.
func TestFencedForOldVersions(t *testing.T) {
	if got := fenced(kerr.ProducerFenced, 1, 2); got != kerr.InvalidProducerEpoch {
		t.Errorf("v1: %v", got)
	}
	if got := fenced(kerr.ProducerFenced, 2, 2); got != kerr.ProducerFenced {
		t.Errorf("v2: %v", got)
	}
	if got := fenced(kerr.InvalidTxnState, 0, 2); got != kerr.InvalidTxnState {
		t.Errorf("another error: %v", got)
	}
}
