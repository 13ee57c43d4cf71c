package raft

import (
	"slices"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/storage"
)

// hookSender calls send for every batch a host hands it.
type hookSender struct{ send func(to uint64, b *Batch) }

func (s hookSender) Send(to uint64, b *Batch) { s.send(to, b) }

// A group runs again only once its last round's traffic is on its way: had another worker
// taken it while the first was still sending, that worker's messages to a peer could go
// out before the first's, and a follower that gets appends out of order rejects them.
func TestWorkerRoundSendsBeforeGroupRunsAgain(t *testing.T) {
	var h *Host
	sends, reruns := 0, 0
	h = newHost(HostOptions{NodeID: 1, Transport: hookSender{func(to uint64, b *Batch) {
		sends++
		if sends > 1 {
			return
		}
		// New work for the group arrives while its round's traffic is being sent; a
		// second worker takes whatever the queue holds.
		if err := h.Campaign(1); err != nil {
			t.Error(err)
		}
		if other := h.readyQ.take(nil, 16); len(other) > 0 {
			reruns++
			h.processAll(other, newOutbox(h))
		}
	}}}, newStepClock())
	ls, err := Open(storage.Options{FS: storage.NewMemFS(), Dir: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddGroup(1, GroupConfig{Storage: ls, Bootstrap: &pb.ConfState{Voters: []uint64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Campaign(1); err != nil { // a pre-vote request to host 2
		t.Fatal(err)
	}
	h.processAll(h.readyQ.take(nil, 16), newOutbox(h))
	if sends == 0 {
		t.Fatal("the campaign sent nothing")
	}
	if reruns > 0 {
		t.Fatal("the group ran on another worker while its previous round's traffic was being sent")
	}
	// The work that arrived meanwhile is not lost: the group is queued again.
	if again := h.readyQ.take(nil, 16); len(again) != 1 || again[0].id != 1 {
		t.Fatalf("queued after the round: %d groups, want group 1", len(again))
	}
}

// The work queue is first in, first out however takes and pushes interleave, and takes
// from a long queue do not hold on to what they took.
func TestWorkQueueOrder(t *testing.T) {
	var q workQueue
	q.init()
	groups := make([]*group, 5000)
	for i := range groups {
		groups[i] = &group{id: uint64(i)}
	}
	next, pushed := 0, 0
	for next < len(groups) {
		for range 11 {
			if pushed < len(groups) {
				q.push(groups[pushed])
				pushed++
			}
		}
		for _, g := range q.take(nil, 7) {
			if g.id != uint64(next) {
				t.Fatalf("took group %d, want %d", g.id, next)
			}
			next++
		}
	}
	if got := q.take(nil, 7); len(got) != 0 {
		t.Fatalf("an empty queue gave %d groups", len(got))
	}
	for i, g := range q.items[:cap(q.items)] {
		if g != nil {
			t.Fatalf("the drained queue still holds group %d at %d", g.id, i)
		}
	}
}

// A priority group goes ahead of every queued group, whether the queue was taken from
// (room before its head) or not.
func TestWorkQueuePriorityFirst(t *testing.T) {
	var q workQueue
	q.init()
	a, b, c := &group{id: 1}, &group{id: 2}, &group{id: 3}
	ctl := &group{id: 99, priority: true}
	q.push(a)
	q.push(b)
	q.push(ctl)
	if got := q.take(nil, 1); got[0] != ctl {
		t.Fatalf("took group %d first, want the priority group", got[0].id)
	}
	q.push(c)
	q.push(ctl) // the head has room now: it goes there
	var ids []uint64
	for _, g := range q.take(nil, 10) {
		ids = append(ids, g.id)
	}
	if want := []uint64{99, 1, 2, 3}; !slices.Equal(ids, want) {
		t.Fatalf("took %v, want %v", ids, want)
	}
}
