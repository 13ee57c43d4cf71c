package partition

import (
	"testing"
	"time"

	etcdraft "go.etcd.io/raft/v3"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/storage"
)

// addJoiner opens a replica of the set's partition on a new host id with Options.Join:
// Replicas (a wrong set on purpose) must be ignored.
func (rs *replicaSet) addJoiner(id uint64) *Partition {
	rs.t.Helper()
	h := raft.NewHost(raft.HostOptions{NodeID: id, Transport: netSender{rs.net, id}, TickInterval: 10 * time.Millisecond})
	rs.net.mu.Lock()
	rs.net.hosts[id] = h
	rs.net.mu.Unlock()
	ls, err := raft.Open(storage.Options{FS: storage.NewMemFS(), Dir: "/p"})
	if err != nil {
		rs.t.Fatal(err)
	}
	p, err := Open(Options{Topic: "t", Partition: 0, Storage: ls, Host: h, Group: 1, Self: id,
		Replicas: []uint64{id, 8, 9}, Config: defaultConfig(), Join: true})
	if err != nil {
		rs.t.Fatal(err)
	}
	rs.hosts[id], rs.parts[id] = h, p
	rs.t.Cleanup(func() { p.Close(); h.Close() })
	return p
}

func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
}

// A joining replica bootstraps nothing and never campaigns; added by a move of {1,2,3}
// to {2,3,4}, it learns the configuration from the leader's log, holds the same records
// at the same offsets, and counts in the ISR only once it votes.
func TestJoiningReplicaIsMovedIn(t *testing.T) {
	rs := newReplicaSet(t, false)
	for i := 0; i < 3; i++ {
		if r := produceAcked(rs.parts[1], kafkatest.Plain(5, 1000).Bytes(), 10*time.Second); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	j := rs.addJoiner(4)
	st, err := rs.hosts[4].Status(1)
	if err != nil || len(st.Voters) != 0 || st.State == etcdraft.StateLeader || st.Term != 0 {
		t.Fatalf("joiner before it is added: %+v, %v", st, err)
	}

	r := &raft.Reconfig{Target: []uint64{2, 3, 4}}
	var sawLearner bool
	pollUntil(t, "the move to {2,3,4}", func() bool {
		for _, id := range []uint64{1, 2, 3, 4} {
			st, err := rs.hosts[id].Status(1)
			if err != nil || st.State != etcdraft.StateLeader {
				continue
			}
			if len(st.Learners) > 0 && len(st.VotersOutgoing) == 0 && len(st.Voters) == 3 && st.Voters[0] == 1 {
				if _, _, voters, ok := rs.parts[id].InsyncState(); ok && voters != 3 {
					t.Errorf("the ISR counts %d voters with learners %v", voters, st.Learners)
				}
				sawLearner = true
			}
			step := r.Next(st)
			switch step.Kind {
			case raft.ReconfigDone:
				return true
			case raft.ReconfigPropose:
				_ = rs.hosts[id].ProposeConfChange(1, step.Change) // dropped ones are planned again
			case raft.ReconfigTransfer:
				_ = rs.hosts[id].TransferLeadership(1, step.To)
				r = &raft.Reconfig{Target: r.Target} // the new leader plans afresh
			}
		}
		return false
	})
	if !sawLearner {
		t.Error("never saw the joiner as a learner")
	}
	leader := rs.elect(2, 3, 4)
	if res := produceAcked(rs.parts[leader], kafkatest.Plain(2, 1000).Bytes(), 10*time.Second); res.Err != nil || res.BaseOffset != 15 {
		t.Fatalf("produce after the move: %+v", res)
	}
	pollUntil(t, "the joiner to hold offset 17", func() bool { return j.Boundaries().Committed == 17 })
	if st, _ := rs.hosts[4].Status(1); len(st.Voters) != 3 || st.Voters[0] != 2 || len(st.Learners) != 0 {
		t.Fatalf("joiner's configuration: %+v", st)
	}
}
