package raft

import (
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// stepClock is a Clock that moves only when the test moves it.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time                  { return c.now }
func (c *stepClock) AfterFunc(time.Duration, func()) {}
func (c *stepClock) advance(d time.Duration)         { c.now = c.now.Add(d) }
func newStepClock() *stepClock                       { return &stepClock{now: time.Unix(1000, 0)} }
func learnerApp(to, index uint64, payload int) *pb.Message {
	m := &pb.Message{Type: pb.MsgApp.Enum(), To: new(to), Index: new(index), LogTerm: new(uint64(1)), Commit: new(index)}
	if payload > 0 {
		m.Entries = []*pb.Entry{{Index: new(index + 1), Term: new(uint64(1)), Data: make([]byte, payload)}}
	}
	return m
}

// sentApps lists what r received for peer to, one "group:index/entries" per message.
func sentApps(r *recordingSender, to uint64) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.sent[to] {
		for _, m := range b.Messages {
			out = append(out, fmt.Sprintf("%d:%d/%d", m.Group, m.Msg.GetIndex(), len(m.Msg.GetEntries())))
		}
	}
	return out
}

// A learner gets its appends in the order raft made them, whatever the bucket holds back:
// an append without entries (raft's commit update on a heartbeat response while the
// learner's window is full) names the index after the held entries, so sent ahead of them
// it would be rejected and raft would fall back to probing the learner.
func TestPacerKeepsLearnerAppendsInOrder(t *testing.T) {
	rec := &recordingSender{sent: map[uint64][]*Batch{}}
	clock := newStepClock()
	rate := int64(10000) // 1000 bytes a tick
	h := newHost(HostOptions{NodeID: 1, Transport: rec, LearnerRate: func() int64 { return rate }}, clock)
	ob := newOutbox(h)

	h.sendToLearner(ob, 3, 7, learnerApp(3, 10, 1000)) // the bucket's tick's worth: at once
	h.sendToLearner(ob, 3, 7, learnerApp(3, 11, 1000)) // waits
	h.sendToLearner(ob, 3, 7, learnerApp(3, 12, 0))    // waits behind it
	h.sendToLearner(ob, 3, 8, learnerApp(3, 40, 0))    // another group, nothing held: at once
	h.sendToLearner(ob, 4, 7, learnerApp(4, 20, 0))    // another learner, nothing held: at once
	ob.flush()
	if got, want := fmt.Sprint(sentApps(rec, 3)), "[7:10/1 8:40/0]"; got != want {
		t.Fatalf("learner 3 got %s at once, want %s", got, want)
	}
	if got, want := fmt.Sprint(sentApps(rec, 4)), "[7:20/0]"; got != want {
		t.Fatalf("learner 4 got %s at once, want %s", got, want)
	}
	if _, _, msgs, bytes := h.LearnerPacing(); msgs != 2 || bytes != 1000 {
		t.Fatalf("held %d messages (%d bytes), want 2 (1000 bytes)", msgs, bytes)
	}

	// raft repeats an append that waits (a probe, on every heartbeat response): one with
	// fewer entries adds nothing to the waiting one and is not sent as well.
	h.sendToLearner(ob, 3, 7, learnerApp(3, 11, 0))
	clock.advance(100 * time.Millisecond)
	h.releaseLearnerApps()
	if got, want := fmt.Sprint(sentApps(rec, 3)), "[7:10/1 8:40/0 7:11/1 7:12/0]"; got != want {
		t.Fatalf("learner 3 got %s after a tick, want %s", got, want)
	}

	// Turned off, the bound lets what waits go at the next tick, and nothing overtakes it.
	h.sendToLearner(ob, 3, 7, learnerApp(3, 13, 5000)) // the bucket's debt: waits
	rate = 0
	h.sendToLearner(ob, 3, 7, learnerApp(3, 14, 1000))
	ob.flush()
	if got := len(sentApps(rec, 3)); got != 4 {
		t.Fatalf("learner 3 got %d messages before the tick, want 4", got)
	}
	h.releaseLearnerApps()
	h.sendToLearner(ob, 3, 7, learnerApp(3, 15, 1000)) // unbounded, nothing held: at once
	ob.flush()
	if got, want := fmt.Sprint(sentApps(rec, 3)[4:]), "[7:13/1 7:14/1 7:15/1]"; got != want {
		t.Fatalf("learner 3 got %s once unbounded, want %s", got, want)
	}
}
