package history

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefiniteTxnEndError reports whether an EndTransaction(TryCommit) error proves that no
// commit was asked of the coordinator, so that the transaction can only end aborted.
// franz-go returns kerr.OperationNotAttempted when the producer ID had failed and it sent
// nothing, and refuses a commit of a transaction that wrote to a topic since recreated
// (TransactionAbortable wrapped with UnknownTopicID) before sending anything. Any answer
// of the coordinator is not definite: a retried EndTxn may follow one that prepared the
// commit, and a coordinator that then fences or refuses the retry has still committed.
func DefiniteTxnEndError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, kerr.OperationNotAttempted) {
		return true
	}
	return errors.Is(err, kerr.TransactionAbortable) && errors.Is(err, kerr.UnknownTopicID)
}

// BeginTxn records that process opened transaction txn meaning to write recs, whose
// values must be unique. Record it just after kgo.Client.BeginTransaction returned, and
// before producing any of them (with InvokeProduce, then setting the produce's Txn:
// InvokeTxnProduce does both).
func BeginTxn(r *Recorder, process, txn string, recs []*kgo.Record) {
	op := NewOp(process, KindTxnBegin, "", -1)
	op.Txn = txn
	op.Records = make([]Record, len(recs))
	for i, rec := range recs {
		op.Records[i] = Record{Offset: -1, Key: string(rec.Key), Value: string(rec.Value), LeaderEpoch: -1}
	}
	r.Observe(op)
}

// InvokeTxnProduce is InvokeProduce for a record of transaction txn.
func InvokeTxnProduce(r *Recorder, process, txn string, rec *kgo.Record) int64 {
	op := NewOp(process, KindProduce, rec.Topic, rec.Partition)
	op.Key, op.Value, op.Txn = string(rec.Key), string(rec.Value), txn
	return r.Invoke(op)
}

// InvokeTxnEnd records that process is about to call EndTransaction on txn with
// decision TxnCommit or TxnAbort, for the reason why; it returns the id for CompleteTxnEnd.
func InvokeTxnEnd(r *Recorder, process, txn, decision, why string) int64 {
	op := NewOp(process, KindTxnEnd, "", -1)
	op.Txn, op.Value, op.Key = txn, decision, why
	return r.Invoke(op)
}

// CompleteTxnEnd records what EndTransaction returned: OK; Unknown when its context ended
// (the request may be in flight); else Fail, definite as DefiniteTxnEndError says (for a
// commit; an abort's failure settles nothing, see txn.go).
func CompleteTxnEnd(r *Recorder, id int64, err error) {
	switch {
	case err == nil:
		r.Complete(id, OK, nil)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		r.Complete(id, Unknown, func(op *Op) { op.Error = err.Error() })
	default:
		r.Complete(id, Fail, func(op *Op) {
			op.Error = err.Error()
			op.Definite = op.Value == TxnCommit && DefiniteTxnEndError(err)
		})
	}
}

// TxnFetchState is what RecordTxnFetches keeps between polls of one consumer: each
// partition's position (past control records too) and the last LSO and high watermark
// recorded, so that a caught-up partition's empty fetches are not recorded again and again.
type TxnFetchState struct {
	Pos      map[TP]int64
	lastLSO  map[TP]int64
	lastHW   map[TP]int64
	recorded map[TP]bool
}

// NewTxnFetchState starts every partition at position 0.
func NewTxnFetchState() *TxnFetchState {
	return &TxnFetchState{Pos: map[TP]int64{}, lastLSO: map[TP]int64{}, lastHW: map[TP]int64{}, recorded: map[TP]bool{}}
}

// RecordTxnFetches is RecordFetches for a consumer of a transactional topic, which runs
// with kgo.KeepControlRecords so that its position passes the commit and abort markers
// (st.Pos). Control records advance the position but are not recorded (no producer wrote
// them). Each poll carries the fetch's LSO; a fetch with no record is recorded too when
// its LSO or high watermark changed, so that the LSO rule sees every value the consumer
// was shown.
func RecordTxnFetches(r *Recorder, process string, fs kgo.Fetches, st *TxnFetchState) {
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		tp := TP{p.Topic, p.Partition}
		op := NewOp(process, KindPoll, p.Topic, p.Partition)
		if p.Err != nil {
			op.Error = p.Err.Error()
			op.Phase = Fail
			r.Append(op)
			return
		}
		for _, rec := range p.Records {
			if rec.Offset+1 > st.Pos[tp] {
				st.Pos[tp] = rec.Offset + 1
			}
			if rec.Attrs.IsControl() {
				continue
			}
			op.Records = append(op.Records, Record{Offset: rec.Offset, Key: string(rec.Key), Value: string(rec.Value), LeaderEpoch: rec.LeaderEpoch})
			op.LeaderEpoch = max(op.LeaderEpoch, rec.LeaderEpoch)
		}
		changed := !st.recorded[tp] || st.lastLSO[tp] != p.LastStableOffset || st.lastHW[tp] != p.HighWatermark
		if len(op.Records) == 0 && !changed {
			return
		}
		op.HW, op.LogStart = p.HighWatermark, p.LogStartOffset
		lso := p.LastStableOffset
		if lso >= 0 { // -1: the broker did not say
			op.LSO = &lso
		}
		st.recorded[tp], st.lastLSO[tp], st.lastHW[tp] = true, lso, p.HighWatermark
		r.Observe(op)
	})
}

// CaughtUp records that process has read topic/partition up to its position pos.
func CaughtUp(r *Recorder, process, topic string, partition int32, pos int64) {
	op := NewOp(process, KindCaughtUp, topic, partition)
	op.Offset = pos
	r.Observe(op)
}
