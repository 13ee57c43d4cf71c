package broker

import (
	"reflect"
	"testing"
)

func TestReplicaStateWireRoundTrip(t *testing.T) {
	corr, group, err := decodeReplicaStateRequest(encodeReplicaStateRequest(7, 42))
	if err != nil || corr != 7 || group != 42 {
		t.Fatalf("request: %d %d %v", corr, group, err)
	}
	s := ReplicaState{Found: true, LastIndex: 900, LastTerm: 6, Term: 8, LogEnd: 12345, Flushed: 12000, Committed: 11999}
	corr, got, err := decodeReplicaStateResponse(encodeReplicaStateResponse(9, s))
	if err != nil || corr != 9 || !reflect.DeepEqual(got, s) {
		t.Fatalf("response: %d %+v %v", corr, got, err)
	}
	for _, bad := range [][]byte{nil, {1}, append(encodeReplicaStateRequest(1, 2), 0), {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, _, err := decodeReplicaStateRequest(bad); err == nil {
			t.Errorf("request %v decoded", bad)
		}
	}
	neg := encodeReplicaStateResponse(1, ReplicaState{LogEnd: -1})
	if _, _, err := decodeReplicaStateResponse(neg); err == nil {
		t.Error("a negative log end decoded")
	}
}

// Raft's up-to-date rule picks the base: the later last term wins over the longer log.
func TestRecoveryBaseIsTheMostUpToDateLog(t *testing.T) {
	long := ReplicaState{LastIndex: 100, LastTerm: 3}
	later := ReplicaState{LastIndex: 90, LastTerm: 4}
	if !later.moreUpToDate(long) || long.moreUpToDate(later) {
		t.Fatal("a later last term must win")
	}
	if !(ReplicaState{LastIndex: 101, LastTerm: 3}).moreUpToDate(long) || long.moreUpToDate(long) {
		t.Fatal("at the same last term the longer log wins, and a log is not more up to date than itself")
	}
}

func FuzzDecodeReplicaState(f *testing.F) {
	f.Add(encodeReplicaStateResponse(3, ReplicaState{Found: true, LastIndex: 5, LogEnd: 9}))
	f.Add(encodeReplicaStateRequest(3, 4))
	f.Fuzz(func(t *testing.T, b []byte) {
		if corr, group, err := decodeReplicaStateRequest(b); err == nil {
			if c2, g2, err := decodeReplicaStateRequest(encodeReplicaStateRequest(corr, group)); err != nil || c2 != corr || g2 != group {
				t.Fatalf("request re-encoding: %v", err)
			}
		}
		corr, s, err := decodeReplicaStateResponse(b)
		if err != nil {
			return
		}
		c2, again, err := decodeReplicaStateResponse(encodeReplicaStateResponse(corr, s))
		if err != nil || c2 != corr || !reflect.DeepEqual(s, again) {
			t.Fatalf("re-encoding %+v: %v %+v", s, err, again)
		}
	})
}
