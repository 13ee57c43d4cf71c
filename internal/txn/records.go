package txn

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The records of __transaction_state, in Kafka's layout (TransactionLogKey and
// TransactionLogValue), so that the topic reads as Kafka's does to any tool that decodes
// it. The value is written at version 1, whose tagged PreviousProducerId keeps the
// producer id an epoch rotation replaced.

const (
	keyVersion   = 0
	valueVersion = 1
)

var errNotTxnRecord = errors.New("not a transaction metadata record")

func encodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

func decodeKey(key []byte) (string, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", fmt.Errorf("transaction record key: %w", err)
	}
	if k.Version != keyVersion {
		return "", fmt.Errorf("%w: key version %d", errNotTxnRecord, k.Version)
	}
	if k.TransactionalID == "" {
		return "", fmt.Errorf("%w: empty transactional id", errNotTxnRecord)
	}
	return k.TransactionalID, nil
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func encodeValue(md Metadata) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = md.ProducerID, md.ProducerEpoch, md.TimeoutMs
	v.State = kmsg.TransactionState(md.State)
	v.LastUpdateTimestamp, v.StartTimestamp = millis(md.LastUpdate), millis(md.StartTime)
	v.PreviousProducerID = md.PreviousProducerID
	for _, tp := range md.Partitions { // sorted, so one topic's partitions are adjacent
		if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
		}
		last := &v.Topics[len(v.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return v.AppendTo(nil)
}

func decodeValue(id string, value []byte) (Metadata, error) {
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return Metadata{}, fmt.Errorf("transaction record of %q: %w", id, err)
	}
	if v.Version < 0 || v.Version > valueVersion {
		return Metadata{}, fmt.Errorf("%w: value version %d", errNotTxnRecord, v.Version)
	}
	st := State(v.State)
	if !st.valid() || st == Dead || st == PrepareEpochFence {
		return Metadata{}, fmt.Errorf("transaction record of %q: state %d cannot be stored", id, v.State)
	}
	if v.ProducerID < 0 || v.TimeoutMillis <= 0 {
		return Metadata{}, fmt.Errorf("transaction record of %q: producer id %d, timeout %d", id, v.ProducerID, v.TimeoutMillis)
	}
	md := Metadata{TransactionalID: id, ProducerID: v.ProducerID, PreviousProducerID: v.PreviousProducerID,
		ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: noProducerEpoch, TimeoutMs: v.TimeoutMillis, State: st,
		StartTime: fromMillis(v.StartTimestamp), LastUpdate: fromMillis(v.LastUpdateTimestamp)}
	if v.Version == 0 {
		md.PreviousProducerID = noProducerID
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			md.Partitions = append(md.Partitions, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	md.Partitions = normalize(md.Partitions)
	return md, nil
}
