package history

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefiniteProduceError reports whether a produce promise's error proves that the record
// was stored by no attempt (see the package comment, "Definite failure").
func DefiniteProduceError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, kgo.ErrMaxBuffered) {
		return true
	}
	for _, e := range []*kerr.Error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRequiredAcks,
		kerr.UnsupportedForMessageFormat, kerr.InvalidRecord, kerr.InvalidTopicException} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// InvokeProduce records the send of rec by process and returns the id for CompleteProduce.
// Call it just before kgo.Client.Produce, from the one goroutine that produces for the
// process, so that the history's send order is the client's. rec.Partition may still be
// unknown (-1 or 0 before partitioning); CompleteProduce records the partition chosen.
func InvokeProduce(r *Recorder, process string, rec *kgo.Record) int64 {
	op := NewOp(process, KindProduce, rec.Topic, rec.Partition)
	op.Key, op.Value = string(rec.Key), string(rec.Value)
	return r.Invoke(op)
}

// CompleteProduce records the outcome a produce promise reported for the invocation id:
// OK with the offset, or Fail, definite as DefiniteProduceError says.
func CompleteProduce(r *Recorder, id int64, rec *kgo.Record, err error) {
	if err == nil {
		r.Complete(id, OK, func(op *Op) {
			op.Partition, op.Offset = rec.Partition, rec.Offset
		})
		return
	}
	r.Complete(id, Fail, func(op *Op) {
		op.Partition = rec.Partition
		op.Error = err.Error()
		op.Definite = DefiniteProduceError(err)
	})
}

// ProducePromise returns a kgo promise that records the outcome of the invocation id.
func ProducePromise(r *Recorder, id int64) func(*kgo.Record, error) {
	return func(rec *kgo.Record, err error) { CompleteProduce(r, id, rec, err) }
}

// RecordFetches records one poll per fetched partition that returned records or an error:
// the records with their offsets and leader epochs, and the response's high watermark and
// log start. Partition errors are recorded as failed polls (the checker ignores them).
func RecordFetches(r *Recorder, process string, fs kgo.Fetches) {
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		op := NewOp(process, KindPoll, p.Topic, p.Partition)
		if p.Err != nil {
			op.Error = p.Err.Error()
			op.Phase = Fail
			r.Append(op)
			return
		}
		if len(p.Records) == 0 {
			return
		}
		op.HW, op.LogStart = p.HighWatermark, p.LogStartOffset
		op.Records = make([]Record, len(p.Records))
		for i, rec := range p.Records {
			op.Records[i] = Record{Offset: rec.Offset, Key: string(rec.Key), Value: string(rec.Value), LeaderEpoch: rec.LeaderEpoch}
			if rec.LeaderEpoch > op.LeaderEpoch {
				op.LeaderEpoch = rec.LeaderEpoch
			}
		}
		r.Observe(op)
	})
}

// FinalFromRecords builds one partition's final read from fetched records.
func FinalFromRecords(logStart int64, recs []*kgo.Record) FinalPartition {
	fp := FinalPartition{LogStart: logStart, Records: make([]Record, len(recs))}
	for i, rec := range recs {
		fp.Records[i] = RecordOf(rec)
	}
	return fp
}

// RecordOf keeps what the checker needs of a consumed record.
func RecordOf(rec *kgo.Record) Record {
	return Record{Offset: rec.Offset, Key: string(rec.Key), Value: string(rec.Value), LeaderEpoch: rec.LeaderEpoch}
}

// ObserveOffsets records a ListOffsets observation (logStart or hw may be -1 when not asked).
func ObserveOffsets(r *Recorder, process, topic string, partition int32, logStart, hw int64, epoch int32) {
	op := NewOp(process, KindOffsets, topic, partition)
	op.LogStart, op.HW, op.LeaderEpoch = logStart, hw, epoch
	r.Observe(op)
}

// InvokeCommit and CompleteCommit record an OffsetCommit of offset for group.
func InvokeCommit(r *Recorder, process, group, topic string, partition int32, offset int64) int64 {
	op := NewOp(process, KindCommit, topic, partition)
	op.Group, op.Offset = group, offset
	return r.Invoke(op)
}

// CompleteCommit records the commit's outcome (err nil: OK; else Fail).
func CompleteCommit(r *Recorder, id int64, err error) {
	if err == nil {
		r.Complete(id, OK, nil)
		return
	}
	r.Complete(id, Fail, func(op *Op) { op.Error = err.Error() })
}

// ObserveCommitted records an OffsetFetch observation of group's committed offset, with
// the invocation time given by invoking first: id := r.Invoke(NewOp(...KindCommitted...)).
func ObserveCommitted(r *Recorder, id int64, offset int64) {
	r.Complete(id, OK, func(op *Op) { op.Offset = offset })
}
