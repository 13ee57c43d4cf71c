package txn

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestMachineScript runs testdata/*.txt against one Machine. Each command that decides a
// change prints the answer and leaves the transition pending until `complete` or `fail`;
// `replay` rebuilds a fresh Machine from every record completed so far, as a new leader
// would, and prints it.
//
//	init id=X timeout=MS [pid=N epoch=N] [now=MS] [max=MS]
//	add id=X pid=N epoch=N parts=t/0,t/1 [now=MS]
//	verify id=X pid=N epoch=N part=t/0
//	end id=X pid=N epoch=N commit|abort [now=MS]
//	markers-written id=X [now=MS]
//	timeouts now=MS                    aborts every transaction past its timeout
//	expire now=MS ms=N
//	complete | fail                    the pending transitions, oldest first
//	show | pending-markers | replay
func TestMachineScript(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &machineScript{m: NewMachine(), nextPID: 1000}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string { return s.run(t, d) })
	})
}

type machineScript struct {
	m       *Machine
	nextPID int64
	pending []*Transition
	log     [][2][]byte // the records completed, in order
}

func (s *machineScript) run(t *testing.T, d *datadriven.TestData) string {
	num := func(key string, def int64) int64 {
		if !d.HasArg(key) {
			return def
		}
		var v int64
		d.ScanArgs(t, key, &v)
		return v
	}
	str := func(key string) string {
		var v string
		if d.HasArg(key) {
			d.ScanArgs(t, key, &v)
		}
		return v
	}
	now := time.UnixMilli(num("now", 0))
	id, pid, epoch := str("id"), num("pid", -1), int16(num("epoch", -1))
	var out strings.Builder
	decided := func(err *kerr.Error, tr *Transition) {
		if err != nil {
			fmt.Fprintf(&out, "error: %s\n", err.Message)
		}
		if tr != nil {
			s.pending = append(s.pending, tr)
			fmt.Fprintf(&out, "pending: %s -> %s\n", tr.ID(), tr.State())
		}
		if err == nil && tr == nil {
			out.WriteString("ok, nothing to write\n")
		}
	}
	switch d.Cmd {
	case "init":
		res, tr := s.m.InitProducerID(id, int32(num("timeout", 60000)), pid, epoch, now, int32(num("max", 900000)),
			func() (int64, error) { s.nextPID++; return s.nextPID, nil })
		if res.Err == nil {
			fmt.Fprintf(&out, "pid=%d epoch=%d\n", res.ProducerID, res.ProducerEpoch)
		}
		decided(res.Err, tr)
	case "add":
		err, tr := s.m.AddPartitions(id, pid, epoch, parseParts(t, str("parts")), now)
		decided(err, tr)
	case "verify":
		parts := parseParts(t, str("part"))
		if err := s.m.VerifyPartition(id, pid, epoch, parts[0]); err != nil {
			return "error: " + err.Message
		}
		return "ok"
	case "end":
		err, tr := s.m.EndTxn(id, pid, epoch, d.HasArg("commit"), now)
		decided(err, tr)
	case "markers-written":
		decided(nil, s.m.MarkersWritten(id, now))
	case "timeouts":
		expired := s.m.Expired(now)
		if len(expired) == 0 {
			return "(none)"
		}
		for _, x := range expired {
			decided(nil, s.m.AbortTimedOut(x, now))
		}
	case "expire":
		expired := s.m.ExpireIDs(now, num("ms", 0))
		if len(expired) == 0 {
			return "(none)"
		}
		for _, tr := range expired {
			decided(nil, tr)
		}
	case "complete", "fail":
		for _, tr := range s.pending {
			if d.Cmd == "complete" {
				k, v := tr.Record()
				s.log = append(s.log, [2][]byte{k, v})
				s.m.Complete(tr)
			} else {
				s.m.Fail(tr)
			}
		}
		s.pending = nil
		return s.show()
	case "show":
		return s.show()
	case "pending-markers":
		return fmt.Sprint(s.m.PendingMarkers())
	case "replay":
		s.m = NewMachine()
		for _, r := range s.log {
			if err := s.m.Replay(r[0], r[1]); err != nil {
				t.Fatal(err)
			}
		}
		return s.show()
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return strings.TrimSpace(out.String())
}

func (s *machineScript) show() string {
	var b strings.Builder
	for _, md := range s.m.List(nil, nil) {
		md.LastProducerEpoch = noProducerEpoch // not persisted: replay would differ
		b.WriteString(md.String() + "\n")
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return strings.TrimSpace(b.String())
}

func parseParts(t *testing.T, s string) []TopicPartition {
	var out []TopicPartition
	for _, p := range strings.Split(s, ",") {
		var tp TopicPartition
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			t.Fatalf("partition %q is not topic/N", p)
		}
		if _, err := fmt.Sscan(p[i+1:], &tp.Partition); err != nil {
			t.Fatal(err)
		}
		tp.Topic = p[:i]
		out = append(out, tp)
	}
	return out
}

// FuzzReplay: any bytes as a record either replay or are refused with an error; none
// panics, and a record that replays encodes back to one that replays the same.
func FuzzReplay(f *testing.F) {
	md := Metadata{TransactionalID: "t", ProducerID: 7, PreviousProducerID: -1, ProducerEpoch: 3, TimeoutMs: 1000,
		State: Ongoing, Partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}, StartTime: time.UnixMilli(5), LastUpdate: time.UnixMilli(9)}
	f.Add(encodeKey("t"), encodeValue(md))
	f.Add(encodeKey("t"), []byte(nil))
	f.Add([]byte{0, 1, 0, 1, 'x'}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		m := NewMachine()
		if err := m.Replay(key, value); err != nil {
			return
		}
		id, _ := decodeKey(key)
		got, ok := m.Get(id)
		if !ok {
			if value != nil {
				t.Fatal("a replayed value left no metadata")
			}
			return
		}
		again := NewMachine()
		if err := again.Replay(encodeKey(id), encodeValue(got)); err != nil {
			t.Fatalf("re-encoded record refused: %v", err)
		}
		if g2, _ := again.Get(id); g2.String() != got.String() {
			t.Fatalf("round trip: %s != %s", g2, got)
		}
	})
}

func TestReplayRefusesForeignRecords(t *testing.T) {
	m := NewMachine()
	if err := m.Replay([]byte{0, 1, 0, 1, 'g'}, []byte{0, 0}); !errors.Is(err, errNotTxnRecord) {
		t.Fatalf("a key of version 1 (a group record): %v", err)
	}
}

// TestEpochRotation: at the last usable epoch InitProducerId rotates the producer id, and
// the producer that asked with its old id and epoch may retry with them and get the new id.
func TestEpochRotation(t *testing.T) {
	m := NewMachine()
	next := int64(10)
	newPID := func() (int64, error) { next++; return next, nil }
	now := time.UnixMilli(1)
	_, tr := m.InitProducerID("r", 1000, -1, -1, now, 900000, newPID)
	m.Complete(tr)
	e := m.txns["r"]
	e.md.ProducerEpoch = maxEpoch - 1
	res, tr := m.InitProducerID("r", 1000, 11, maxEpoch-1, now, 900000, newPID)
	if res.Err != nil || res.ProducerID != 12 || res.ProducerEpoch != 0 {
		t.Fatalf("rotation: %+v", res)
	}
	m.Complete(tr)
	res, _ = m.InitProducerID("r", 1000, 11, maxEpoch-1, now, 900000, newPID)
	if res.Err != nil || res.ProducerID != 12 {
		t.Fatalf("a retry with the replaced id: %+v", res)
	}
	if res, _ := m.InitProducerID("r", 1000, 11, 3, now, 900000, newPID); res.Err != kerr.ProducerFenced {
		t.Fatalf("the replaced id at another epoch: %+v", res)
	}
	k, v := tr.Record()
	again := NewMachine()
	if err := again.Replay(k, v); err != nil {
		t.Fatal(err)
	}
	if md, _ := again.Get("r"); md.PreviousProducerID != 11 || md.ProducerID != 12 {
		t.Fatalf("replayed rotation: %s", md)
	}
}
