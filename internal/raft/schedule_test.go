package raft

import (
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
