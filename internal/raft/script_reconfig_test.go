package raft_test

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/cockroachdb/datadriven"
	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/raft/rafttest"
)

// The membership-change commands of raft's scripts: the planner (raft.Reconfig) run on
// a leader, and what a move must leave behind (the same log everywhere, the leader's view
// of every member).
func init() {
	// reconfigure H|leader target=4,5,6 [steps=N|until-done]: host H's (or the current
	// leader's, printed as "leader": elections by ticks are not deterministic) planner takes one step
	// towards the target (a new target replaces H's planner) and executes it: a proposal
	// runs at once, a transfer is queued. With steps or until-done, the hosts stabilize
	// after each step and the steps go on, on whichever host leads, N of them or until the
	// plan waits or is done.
	scriptCommands["reconfigure"] = func(s *script, td *datadriven.TestData) string {
		args := rafttest.Positional(td, "until-done")
		if len(args) != 1 {
			s.t.Fatalf("%s: reconfigure H target=ID,... [until-done]", td.Pos)
		}
		var id uint64
		label := func(id uint64) string { return fmt.Sprint(id) }
		if args[0] == "leader" {
			id = s.leader()
			label = func(uint64) string { return "leader" }
		} else {
			id = rafttest.ParseID(s.t, args[0])
		}
		target := s.target(td)
		steps := 1
		if td.HasArg("until-done") {
			steps = 50
		}
		td.MaybeScanArgs(s.t, "steps", &steps)
		var out []string
		for n := 1; n <= 50; n++ {
			step := s.reconfig(id, target).Next(s.mustStatus(id))
			out = append(out, fmt.Sprintf("%s: %s", label(id), describeStep(step)))
			switch step.Kind {
			case raft.ReconfigPropose:
				if err := s.d.Host(id).ProposeConfChange(scriptGroup, step.Change); err != nil {
					out = append(out, "  "+err.Error())
				}
			case raft.ReconfigTransfer:
				if err := s.d.Host(id).TransferLeadership(scriptGroup, step.To); err != nil {
					out = append(out, "  "+err.Error())
				}
			}
			if n == steps || step.Kind == raft.ReconfigWait || step.Kind == raft.ReconfigDone {
				return strings.Join(out, "\n")
			}
			s.d.Stabilize()
			if l := s.leader(); l != 0 {
				id = l
			}
		}
		s.t.Fatalf("%s: reconfigure: no end after 50 steps:\n%s", td.Pos, strings.Join(out, "\n"))
		return ""
	}
	// reconfig-status H target=4,5,6: what host H's planner would do next (nothing is
	// executed), with each learner's lag.
	scriptCommands["reconfig-status"] = func(s *script, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		step := s.reconfig(id, s.target(td)).Next(s.mustStatus(id))
		return fmt.Sprintf("%d: %s", id, describeStep(step))
	}
	// progress H: the leader's view of each member: match, and whether it is a learner.
	scriptCommands["progress"] = func(s *script, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		st := s.mustStatus(id)
		var out []string
		for _, m := range sortedKeys(st.Progress) {
			role := "voter"
			if slices.Contains(st.Learners, m) {
				role = "learner"
			}
			out = append(out, fmt.Sprintf("%d: %s match=%d", m, role, st.Progress[m].Match))
		}
		if st.PendingConf {
			out = append(out, "pending conf change")
		}
		return strings.Join(out, "\n")
	}
	// log [H...]: each host's log: its first and last index, the kinds of its entries
	// (c: configuration change, e: empty, d: data) and a digest of their terms and bytes,
	// so that identical logs print identical lines.
	scriptCommands["log"] = eachHost(func(s *script, id uint64) string {
		ls := s.ls[id]
		first, _ := ls.FirstIndex()
		last, _ := ls.LastIndex()
		if last < first {
			return fmt.Sprintf("%d: empty (first=%d)", id, first)
		}
		ents, err := ls.Entries(first, last+1, 1<<62)
		if err != nil {
			return fmt.Sprintf("%d: %v", id, err)
		}
		h := fnv.New64a()
		var kinds strings.Builder
		for _, e := range ents {
			fmt.Fprintf(h, "%d/%d/%d/", e.GetIndex(), e.GetTerm(), e.GetType())
			h.Write(e.GetData())
			switch {
			case e.GetType() != pb.EntryNormal:
				kinds.WriteByte('c')
			case len(e.GetData()) == 0:
				kinds.WriteByte('e')
			default:
				kinds.WriteByte('d')
			}
		}
		return fmt.Sprintf("%d: %d..%d %s digest=%x", id, first, last, kinds.String(), h.Sum64())
	})
	// retain H bytes=N: host H's log drops its oldest closed segments, keeping at least N
	// bytes and every entry above its applied index (retention): a member that needs what
	// is gone gets a snapshot.
	scriptCommands["retain"] = func(s *script, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		var bytes int64
		td.ScanArgs(s.t, "bytes", &bytes)
		st := s.mustStatus(id)
		if _, err := s.ls[id].Log().EnforceRetentionUpTo(-1, bytes, st.Applied); err != nil {
			return err.Error()
		}
		first, _ := s.ls[id].FirstIndex()
		return fmt.Sprintf("%d: log starts at %d", id, first)
	}
	// pacing [H...]: each host's learner pacer: bytes to learners sent at once and after
	// waiting, and what waits now.
	scriptCommands["pacing"] = eachHost(func(s *script, id uint64) string {
		sent, delayed, msgs, bytes := s.d.Host(id).LearnerPacing()
		return fmt.Sprintf("%d: sent=%d delayed=%d held=%d (%d bytes)", id, sent, delayed, msgs, bytes)
	})
	// joinable H: whether a replica added later could rebuild the configuration from H's log.
	scriptCommands["joinable"] = func(s *script, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		ok, err := s.d.Host(id).JoinableLog(scriptGroup)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d: %v", id, ok)
	}
}

func (s *script) target(td *datadriven.TestData) []uint64 {
	a, ok := td.Arg("target")
	if !ok {
		s.t.Fatalf("%s: %s H target=ID,...", td.Pos, td.Cmd)
	}
	return rafttest.ParseIDs(s.t, a.Vals)
}

// reconfig is host id's planner for target (a new one if the target changed).
func (s *script) reconfig(id uint64, target []uint64) *raft.Reconfig {
	r := s.reconfigs[id]
	if r == nil || !slices.Equal(r.Target, target) {
		r = &raft.Reconfig{Target: target}
		s.reconfigs[id] = r
	}
	return r
}

func (s *script) mustStatus(id uint64) raft.Status {
	st, err := s.d.Host(id).Status(scriptGroup)
	if err != nil {
		s.t.Fatalf("host %d: %v", id, err)
	}
	return st
}

// leader is the host that leads the group in the highest term (0: none).
func (s *script) leader() uint64 {
	var lead, term uint64
	for _, id := range s.d.IDs() {
		st, err := s.d.Host(id).Status(scriptGroup)
		if err == nil && st.State == etcdraft.StateLeader && st.Term > term {
			lead, term = id, st.Term
		}
	}
	return lead
}

func describeStep(st raft.ReconfigStep) string {
	out := fmt.Sprintf("%s phase=%s", st.Kind, st.Phase)
	switch st.Kind {
	case raft.ReconfigPropose:
		out += " " + describeChange(st.Change)
	case raft.ReconfigTransfer:
		out += fmt.Sprintf(" to=%d", st.To)
	case raft.ReconfigWait:
		out += ": " + st.Waiting
	}
	if len(st.Lag) > 0 {
		var lags []string
		for _, id := range sortedKeys(st.Lag) {
			lags = append(lags, fmt.Sprintf("%d:%d", id, st.Lag[id]))
		}
		out += " lag=" + strings.Join(lags, ",")
	}
	return out
}

func describeChange(cc *pb.ConfChangeV2) string {
	if len(cc.GetChanges()) == 0 {
		return "leave-joint"
	}
	var parts []string
	if cc.GetTransition() == pb.ConfChangeTransition_ConfChangeTransitionJointExplicit {
		parts = append(parts, "enter-joint")
	}
	for _, c := range cc.GetChanges() {
		verb := map[pb.ConfChangeType]string{
			pb.ConfChangeType_ConfChangeAddNode:        "voter",
			pb.ConfChangeType_ConfChangeAddLearnerNode: "learner",
			pb.ConfChangeType_ConfChangeRemoveNode:     "remove",
		}[c.GetType()]
		parts = append(parts, fmt.Sprintf("%s(%d)", verb, c.GetNodeId()))
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	ks := make([]uint64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
