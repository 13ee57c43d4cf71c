package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"
)

// Kind is what an operation does.
type Kind string

const (
	// KindProduce sends one record (Key, Value) to Topic/Partition; ok carries Offset.
	KindProduce Kind = "produce"
	// KindPoll is one partition's slice of a consumer poll (fetch): Records, and the
	// HighWatermark and LogStart of the same fetch response where known.
	KindPoll Kind = "poll"
	// KindSeek says the consumer Process repositioned on Topic/Partition (a rebalance, a
	// reset, a truncation detected through OffsetForLeaderEpoch): its next poll may go back.
	KindSeek Kind = "seek"
	// KindOffsets is a ListOffsets observation: LogStart and/or HighWatermark, with
	// LeaderEpoch where the response carried it.
	KindOffsets Kind = "offsets"
	// KindCommit is an OffsetCommit of Offset for Group on Topic/Partition.
	KindCommit Kind = "commit"
	// KindCommitted is an observation of Group's committed Offset (OffsetFetch).
	KindCommitted Kind = "committed"
	// KindFault marks a fault injected by the harness (Value names it). Lossy marks a fault
	// that may legally lose acknowledged writes in the mode (a majority power loss).
	KindFault Kind = "fault"
	// KindRestart closes the window of the lossy fault Value names: its Time is the first
	// moment a broker that fault took down could run a partition replica again. From the
	// fault's marker until then no partition has a majority of its replicas running, so no
	// write can become majority-replicated in between (see Checker.checkLost). The harness
	// records it once those brokers are up again, so its Time may precede the Time of
	// entries just before it.
	KindRestart Kind = "restart"
	// KindTxnBegin opens transaction Txn of the transactional producer Process (one
	// observation at BeginTransaction): Records are the records it means to produce, with
	// their keys and values (offsets -1). Each is then produced as a KindProduce that
	// carries the same Txn. See txn.go.
	KindTxnBegin Kind = "txn-begin"
	// KindTxnEnd is an EndTransaction of Txn: Value is "commit" or "abort", the invocation
	// is recorded just before the request and its Time is when the producer asked; the
	// completion is OK, Fail (Definite when the commit was surely not made, see
	// DefiniteTxnEndError) or Unknown. Key says why the producer chose it ("chosen", or
	// "produce failed" when a record of the transaction failed). A transaction may have
	// several: an abort after a failed commit.
	KindTxnEnd Kind = "txn-end"
	// KindCaughtUp says the consumer Process has read Topic/Partition up to Offset (its
	// position, past any control records) once the producers had stopped and every
	// transaction had ended: what is committed below Offset it must have read.
	KindCaughtUp Kind = "caught-up"
)

// Phase is where an operation is in its life.
type Phase string

const (
	Invoke  Phase = "invoke"  // sent, outcome not known yet
	OK      Phase = "ok"      // acknowledged
	Fail    Phase = "fail"    // failed; see Op.Definite
	Unknown Phase = "unknown" // indeterminate: the client died, timed out or was closed
)

// Record is one record as read from a partition (or stored in the final read).
type Record struct {
	Offset      int64  `json:"offset"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value"`
	LeaderEpoch int32  `json:"epoch"`
}

// Op is one entry of a history. An operation with an outcome is two entries that share ID:
// an Invoke and its completion (OK, Fail or Unknown). An observation that is recorded only
// when it completes (a poll, a fault) is a single OK entry with its own ID. Numbers that
// are not known are -1.
type Op struct {
	Seq         int64     `json:"seq"` // position in the history, assigned by the Recorder
	ID          int64     `json:"id"`  // links an invocation to its completion
	Process     string    `json:"process"`
	Kind        Kind      `json:"kind"`
	Phase       Phase     `json:"phase"`
	Topic       string    `json:"topic,omitempty"`
	Partition   int32     `json:"partition"`
	Group       string    `json:"group,omitempty"`
	Key         string    `json:"key,omitempty"`
	Value       string    `json:"value,omitempty"`
	Offset      int64     `json:"offset"`
	LeaderEpoch int32     `json:"epoch"`
	HW          int64     `json:"hw"`
	LogStart    int64     `json:"logStart"`
	Records     []Record  `json:"records,omitempty"`
	Definite    bool      `json:"definite,omitempty"`
	Lossy       bool      `json:"lossy,omitempty"`
	Error       string    `json:"error,omitempty"`
	Time        time.Time `json:"time"`
	// Txn names the transaction of a txn-begin, txn-end or transactional produce.
	Txn string `json:"txn,omitempty"`
	// LSO is a poll's last stable offset, when the fetch response carried it (nil: not
	// known, as in histories older than transactions).
	LSO *int64 `json:"lso,omitempty"`
}

// NewOp returns an Op of the given kind with every number unknown (-1).
func NewOp(process string, kind Kind, topic string, partition int32) Op {
	return Op{Process: process, Kind: kind, Topic: topic, Partition: partition,
		Offset: -1, LeaderEpoch: -1, HW: -1, LogStart: -1}
}

// TP names a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Recorder appends operations to a history. It is safe for concurrent use. It holds only
// the invocations still in flight; every entry goes to the writer at once (buffered), so
// memory stays bounded however long the run. A memory recorder (NewMemoryRecorder) keeps
// everything instead, for tests.
type Recorder struct {
	mu      sync.Mutex
	w       *bufio.Writer
	enc     *json.Encoder
	closer  io.Closer
	mem     []Op
	keep    bool
	seq     int64
	id      int64
	pending map[int64]Op
	err     error
	now     func() time.Time
}

// NewRecorder writes the history as JSON lines to w.
func NewRecorder(w io.Writer) *Recorder {
	bw := bufio.NewWriterSize(w, 1<<16)
	return &Recorder{w: bw, enc: json.NewEncoder(bw), pending: map[int64]Op{}, now: time.Now}
}

// CreateFile creates (truncates) path and records the history into it.
func CreateFile(path string) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	r := NewRecorder(f)
	r.closer = f
	return r, nil
}

// NewMemoryRecorder keeps the history in memory; Ops returns it.
func NewMemoryRecorder() *Recorder {
	return &Recorder{keep: true, pending: map[int64]Op{}, now: time.Now}
}

// Append records op as given, apart from Seq (always assigned), ID (assigned when 0) and
// Time (set to now when zero). It returns the entry as recorded.
func (r *Recorder) Append(op Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.appendLocked(op)
}

func (r *Recorder) appendLocked(op Op) Op {
	r.seq++
	op.Seq = r.seq
	if op.ID == 0 {
		r.id++
		op.ID = r.id
	}
	if op.Time.IsZero() {
		op.Time = r.now()
	}
	if r.keep {
		r.mem = append(r.mem, op)
	} else if r.err == nil {
		r.err = r.enc.Encode(op)
	}
	return op
}

// Invoke records the invocation of op and returns its ID, to pass to Complete.
func (r *Recorder) Invoke(op Op) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = 0
	op.Phase = Invoke
	op = r.appendLocked(op)
	r.pending[op.ID] = op
	return op.ID
}

// Complete records the completion of the invocation id with phase p. The completion starts
// as a copy of the invocation (minus Records), and fill, when not nil, sets its results.
// Completing an unknown or already completed id is an error, reported by Err.
func (r *Recorder) Complete(id int64, p Phase, fill func(*Op)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	inv, ok := r.pending[id]
	if !ok {
		if r.err == nil {
			r.err = fmt.Errorf("history: completion of unknown invocation %d", id)
		}
		return
	}
	delete(r.pending, id)
	op := inv
	op.Records = nil
	op.Phase = p
	op.Time = time.Time{}
	if fill != nil {
		fill(&op)
	}
	op.ID = id
	op.Phase = p
	r.appendLocked(op)
}

// Observe records a single completed observation (a poll, a ListOffsets, a seek, a fault).
func (r *Recorder) Observe(op Op) Op {
	op.ID = 0
	op.Phase = OK
	return r.Append(op)
}

// Fault records a fault injected by the harness, as an observation of process "nemesis".
// Record a lossy fault before it is injected: a write acknowledged after the marker is
// then never wrongly judged to predate it.
func (r *Recorder) Fault(name string, lossy bool) Op {
	op := NewOp("nemesis", KindFault, "", -1)
	op.Value = name
	op.Lossy = lossy
	return r.Observe(op)
}

// Restart records that the brokers of the lossy fault recorded as name could run partition
// replicas again from time up (see KindRestart). Record it once they are up, with up no
// later than the first moment any of them could: a write acknowledged before up is then
// never wrongly judged to have been replicated before the fault.
func (r *Recorder) Restart(name string, up time.Time) Op {
	op := NewOp("nemesis", KindRestart, "", -1)
	op.Value = name
	op.Time = up
	return r.Observe(op)
}

// Pending returns how many invocations have no completion yet.
func (r *Recorder) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// Err returns the first write or protocol error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Ops returns a copy of a memory recorder's history.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.mem...)
}

// Close completes every invocation still in flight as Unknown ("recorder closed"), flushes
// the writer and closes the file it created.
func (r *Recorder) Close() error {
	r.mu.Lock()
	ids := make([]int64, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		r.Complete(id, Unknown, func(op *Op) { op.Error = "recorder closed" })
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		if err := r.w.Flush(); err != nil && r.err == nil {
			r.err = err
		}
	}
	if r.closer != nil {
		if err := r.closer.Close(); err != nil && r.err == nil {
			r.err = err
		}
		r.closer = nil
	}
	return r.err
}

// Flush writes out what is buffered (the history file of a run that is then killed keeps
// everything up to the last Flush).
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		if err := r.w.Flush(); err != nil && r.err == nil {
			r.err = err
		}
	}
	return r.err
}

// Scan reads a JSON-lines history from rd and calls fn for each entry in order, without
// holding the history in memory. A torn last line (a run killed mid-write) is ignored.
func Scan(rd io.Reader, fn func(Op) error) error {
	br := bufio.NewReaderSize(rd, 1<<16)
	line := 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			var op Op
			if jerr := json.Unmarshal(b, &op); jerr != nil {
				if errors.Is(err, io.EOF) { // torn tail
					return nil
				}
				return fmt.Errorf("history: line %d: %w", line, jerr)
			}
			if ferr := fn(op); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Load reads a whole JSON-lines history.
func Load(rd io.Reader) ([]Op, error) {
	var ops []Op
	err := Scan(rd, func(op Op) error { ops = append(ops, op); return nil })
	return ops, err
}

// LoadFile reads the history file at path.
func LoadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Load(f)
}
