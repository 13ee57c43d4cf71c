package broker

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/txn"
)

func TestLeadersRoundTrip(t *testing.T) {
	in := []leaderEntry{{group: 1, term: 7, logStart: 42, isr: []int32{1, 2, 3}}, {group: 1 << 40, term: 1, isr: nil}}
	out, err := decodeLeaders(encodeLeaders(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v, want %+v", out, in)
	}
	for _, bad := range [][]byte{nil, {0}, {2, 0}, {1, 5}, append(encodeLeaders(in), 0), encodeLeaders(in)[:5]} {
		if _, err := decodeLeaders(bad); err == nil {
			t.Errorf("decodeLeaders(%x) accepted", bad)
		}
	}
}

func TestForwardRoundTrip(t *testing.T) {
	req := forwardRequest{corr: 9, acks: -1, timeoutMs: 1500, partition: 3, topic: "orders", records: []byte("batch")}
	got, err := decodeForwardRequest(mustEncodeForward(t, req))
	if err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("request round trip: %+v %v", got, err)
	}
	res := partition.ProduceResult{BaseOffset: 10, LogStartOffset: 2, Err: kerr.NotLeaderForPartition, Msg: "moved"}
	corr, gotRes, err := decodeForwardResponse(encodeForwardResponse(9, res))
	if err != nil || corr != 9 || !reflect.DeepEqual(gotRes, res) {
		t.Fatalf("response round trip: %d %+v %v", corr, gotRes, err)
	}
	for _, bad := range [][]byte{nil, {1}, {2, 0, 0, 0, 0, 0, 0, 0, 9}, encodeForwardResponse(1, res)[:20]} {
		if _, err := decodeForwardRequest(bad); err == nil && len(bad) < 21 {
			t.Errorf("decodeForwardRequest(%x) accepted", bad)
		}
		if _, _, err := decodeForwardResponse(bad); err == nil {
			t.Errorf("decodeForwardResponse(%x) accepted", bad)
		}
	}
}

func TestTxnMarkerRoundTrip(t *testing.T) {
	req := txnMarkerRequest{corr: 11, timeoutMs: 2500, m: TxnMarker{Topic: "payments", Partition: 4, ProducerID: 1 << 40,
		ProducerEpoch: 3, Commit: true, CoordinatorEpoch: 9}}
	enc := encodeTxnMarkerRequest(req)
	got, err := decodeTxnMarkerRequest(enc)
	if err != nil || got != req {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	negative := encodeTxnMarkerRequest(txnMarkerRequest{corr: 1, m: TxnMarker{Topic: "t", ProducerID: -1}})
	badCommit := bytes.Clone(enc)
	badCommit[23] = 2
	for _, bad := range [][]byte{nil, {1}, enc[:len(enc)-1], append(bytes.Clone(enc), 0), badCommit, negative} {
		if _, err := decodeTxnMarkerRequest(bad); err == nil {
			t.Errorf("decodeTxnMarkerRequest(%x) accepted", bad)
		}
	}
}

func TestTxnVerifyRoundTrip(t *testing.T) {
	req := txnVerifyRequest{corr: 12, id: "orders-app", pid: 1 << 33, epoch: 5, tp: txn.TopicPartition{Topic: "orders", Partition: 7}}
	enc := encodeTxnVerifyRequest(req)
	if got, err := decodeTxnVerifyRequest(enc); err != nil || got != req {
		t.Fatalf("request round trip: %+v %v", got, err)
	}
	for _, code := range []*kerr.Error{nil, kerr.ProducerFenced, kerr.InvalidTxnState} {
		corr, got, err := decodeTxnVerifyResponse(encodeTxnVerifyResponse(3, code))
		if err != nil || corr != 3 || got != code {
			t.Fatalf("response round trip of %v: %d %v %v", code, corr, got, err)
		}
	}
	noID := encodeTxnVerifyRequest(txnVerifyRequest{corr: 1, tp: txn.TopicPartition{Topic: "t"}, pid: 1})
	for _, bad := range [][]byte{nil, {1}, enc[:len(enc)-1], append(bytes.Clone(enc), 0), noID} {
		if _, err := decodeTxnVerifyRequest(bad); err == nil {
			t.Errorf("decodeTxnVerifyRequest(%x) accepted", bad)
		}
	}
}

// FuzzDecodeBrokerMessages: the broker's own inter-broker messages never panic on any
// input, and what decodes re-encodes to the same bytes.
func FuzzDecodeBrokerMessages(f *testing.F) {
	f.Add(encodeLeaders([]leaderEntry{{group: 1, term: 2, logStart: 3, isr: []int32{1}}}))
	f.Add(mustEncodeForward(f, forwardRequest{corr: 1, acks: 1, partition: 0, topic: "t", records: []byte{1, 2}}))
	f.Add(mustEncodeForward(f, forwardRequest{corr: 2, acks: -1, partition: 1, topic: "t", records: []byte{1, 2},
		requester: &Requester{Principal: "User:alice", Host: "10.0.0.7"}}))
	f.Add(encodeForwardResponse(1, partition.ProduceResult{BaseOffset: 5}))
	f.Add(encodeTxnMarkerRequest(txnMarkerRequest{corr: 3, timeoutMs: 100, m: TxnMarker{Topic: "t", Partition: 2, ProducerID: 7, ProducerEpoch: 1, Commit: true}}))
	f.Add(encodeTxnVerifyRequest(txnVerifyRequest{corr: 4, id: "app", pid: 9, epoch: 2, tp: txn.TopicPartition{Topic: "t", Partition: 1}}))
	f.Add(encodeTxnVerifyResponse(4, kerr.InvalidTxnState))
	f.Add([]byte("\x010000000000")) // a verify answer with a code no Kafka error has
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, err := decodeTxnVerifyRequest(b); err == nil && !bytes.Equal(encodeTxnVerifyRequest(req), b) {
			t.Fatalf("verify request %x re-encodes differently", b)
		}
		if corr, code, err := decodeTxnVerifyResponse(b); err == nil && !bytes.Equal(encodeTxnVerifyResponse(corr, code), b) {
			t.Fatalf("verify response %x re-encodes differently", b)
		}
		if list, err := decodeLeaders(b); err == nil && !bytes.Equal(encodeLeaders(list), b) {
			t.Fatalf("leaders %x re-encode differently", b)
		}
		if req, err := decodeForwardRequest(b); err == nil {
			if again, err := encodeForwardRequest(req); err != nil || !bytes.Equal(again, b) {
				t.Fatalf("forward request %x re-encodes differently (%v)", b, err)
			}
		}
		_, _, _ = decodeForwardResponse(b)
		if req, err := decodeTxnMarkerRequest(b); err == nil && !bytes.Equal(encodeTxnMarkerRequest(req), b) {
			t.Fatalf("marker request %x re-encodes differently", b)
		}
	})
}

func mustEncodeForward(t testing.TB, req forwardRequest) []byte {
	t.Helper()
	b, err := encodeForwardRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
