package raft

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

func TestUrgentFlush(t *testing.T) {
	hs := func(term, vote uint64) *pb.HardState {
		return &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(uint64(3))}
	}
	resp := func(t pb.MessageType) []*pb.Message { return []*pb.Message{{Type: t.Enum()}} }
	for _, tc := range []struct {
		name string
		recs []appendRec
		want bool
	}{
		{"nothing queued", nil, false},
		{"entries in the persisted term and vote (only the commit index moves)",
			[]appendRec{{hs: hs(4, 2), responses: resp(pb.MsgAppResp)}, {}}, false},
		{"a new term", []appendRec{{}, {hs: hs(5, 2)}}, true},
		{"a new vote in the same term", []appendRec{{hs: hs(4, 3)}}, true},
		{"a vote answer", []appendRec{{responses: resp(pb.MsgVoteResp)}}, true},
		{"a pre-vote answer", []appendRec{{responses: resp(pb.MsgPreVoteResp)}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := urgentFlush(tc.recs, 4, 2); got != tc.want {
				t.Fatalf("urgentFlush = %v, want %v", got, tc.want)
			}
		})
	}
}
