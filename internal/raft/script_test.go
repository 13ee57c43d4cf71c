package raft_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/raft/rafttest"
	"github.com/cairn-io/cairn/internal/storage"
)

// The scripts in testdata/ (datadriven format) run one raft group (scriptGroup) on every
// host of a rafttest driver, which owns the network, disk and clock commands; the
// commands here build the hosts and the group, propose, and print. Proposals carry a
// Kafka RecordBatch of a few records, as the partition layer's do. Each script opens with
// what it proves.

const scriptGroup = 1

// script is one script's state: the driver of its current scenario and the group's storage
// and proposals on it.
type script struct {
	t      testing.TB
	d      *rafttest.Driver
	voters []uint64
	// joiners are the hosts whose replica starts with no bootstrap: it joins when a
	// leader adds it.
	joiners map[uint64]bool
	// atZero: the bootstrap configuration is in force at index 0 (an earlier release's).
	atZero bool
	// learnerRate is every host's LearnerRate (0: unpaced).
	learnerRate int64
	// maxMsg is every host's MaxSizePerMsg (0: raft's default).
	maxMsg uint64
	// electionBacklog is every host's ElectionBacklog (0: the default).
	electionBacklog int
	// priority is the group's GroupConfig.Priority.
	priority bool
	// reconfigs are the planners, by the host that drives them (a new leader, a new one).
	reconfigs map[uint64]*raft.Reconfig
	// flushDelay is the write-caching policy's hold (0: strict, every append flushed at once).
	flushDelay time.Duration
	// shareVisible is what the groups' ShareVisible says.
	shareVisible bool
	ls           map[uint64]*raft.LogStorage
	fs           map[uint64]*storage.MemFS // each host's disk
	props        map[string]*raft.Proposal
	changes      map[uint64]int // OnChange calls per host since the last changes command
	names        []string       // proposal names, in the order proposed
}

// scriptCommands are the commands of raft's own scripts, beside the driver's.
var scriptCommands = map[string]func(s *script, td *datadriven.TestData) string{
	// add-hosts N [voters=1,2,3] [join=4,5] [bootstrap-at-zero] [learner-rate=BYTES/S]
	// [max-msg=BYTES] [election-backlog=N] [priority] [write-caching=DURATION]
	// [share-visible=BOOL] [show-visible]: a new scenario of N hosts (voters: all); join
	// hosts start their replica with no bootstrap (they join when added); with
	// bootstrap-at-zero the others bootstrap as an earlier release did (the configuration
	// in force at index 0, not in the log); with write-caching, appends
	// wait that long before their fsync; share-visible is the groups' ShareVisible (as the
	// partition's: write caching, unless given); with show-visible, deliver names the
	// leaders' visible reports.
	"add-hosts": func(s *script, td *datadriven.TestData) string {
		n := rafttest.HostCount(s.t, td, "show-visible", "bootstrap-at-zero", "priority")
		s.atZero = td.HasArg("bootstrap-at-zero")
		var delay time.Duration
		mode := "strict"
		if a, ok := td.Arg("write-caching"); ok {
			var err error
			if delay, err = time.ParseDuration(a.SingleVal(s.t)); err != nil {
				s.t.Fatal(err)
			}
			mode = "write caching " + delay.String()
		}
		var voters []uint64
		if a, ok := td.Arg("voters"); ok {
			voters = rafttest.ParseIDs(s.t, a.Vals)
		}
		s.joiners = map[uint64]bool{}
		if a, ok := td.Arg("join"); ok {
			for _, id := range rafttest.ParseIDs(s.t, a.Vals) {
				s.joiners[id] = true
			}
		}
		s.shareVisible = delay > 0
		if td.HasArg("share-visible") {
			td.ScanArgs(s.t, "share-visible", &s.shareVisible)
			mode += fmt.Sprintf(", share-visible=%v", s.shareVisible)
		}
		s.learnerRate = 0
		if td.HasArg("learner-rate") {
			td.ScanArgs(s.t, "learner-rate", &s.learnerRate)
			mode += fmt.Sprintf(", learners paced at %d B/s", s.learnerRate)
		}
		s.maxMsg = 0
		if td.HasArg("max-msg") {
			td.ScanArgs(s.t, "max-msg", &s.maxMsg)
			mode += fmt.Sprintf(", messages of at most %d bytes", s.maxMsg)
		}
		s.electionBacklog = 0
		if td.HasArg("election-backlog") {
			td.ScanArgs(s.t, "election-backlog", &s.electionBacklog)
			mode += fmt.Sprintf(", election backlog %d", s.electionBacklog)
		}
		if s.priority = td.HasArg("priority"); s.priority {
			mode += ", priority group"
		}
		s.reset(n, voters, delay)
		s.d.ShowVisible(td.HasArg("show-visible"))
		if len(s.joiners) > 0 {
			mode += fmt.Sprintf(", joining %v", sortedKeys(s.joiners))
		}
		if s.atZero {
			mode += ", bootstrap at index 0"
		}
		return fmt.Sprintf("%d hosts, voters %v, %s", n, s.voters, mode)
	},
	// campaign H: host H campaigns (handled at the next ready round).
	"campaign": func(s *script, td *datadriven.TestData) string {
		return errString(s.d.Host(s.d.HostArg(td)).Campaign(scriptGroup))
	},
	// peer-gone H... of=P: the hosts' transports report that host P's process is gone
	// (Host.PeerGone; handled at the next ready round).
	"peer-gone": func(s *script, td *datadriven.TestData) string {
		var gone uint64
		td.ScanArgs(s.t, "of", &gone)
		for _, id := range s.d.HostArgs(td) {
			s.d.Host(id).PeerGone(gone)
		}
		return ""
	},
	// campaigning H on|off: host H's campaign switch (Host.SetCampaigning).
	"campaigning": func(s *script, td *datadriven.TestData) string {
		args := rafttest.Positional(td)
		if len(args) != 2 || (args[1] != "on" && args[1] != "off") {
			s.t.Fatalf("%s: campaigning H on|off", td.Pos)
		}
		s.d.Host(rafttest.ParseID(s.t, args[0])).SetCampaigning(args[1] == "on")
		return ""
	},
	// transfer H to=ID: host H (leading) hands leadership to ID.
	"transfer": func(s *script, td *datadriven.TestData) string {
		var to uint64
		td.ScanArgs(s.t, "to", &to)
		return errString(s.d.Host(s.d.HostArg(td)).TransferLeadership(scriptGroup, to))
	},
	// propose H NAME [records=N]: host H proposes a batch of N records (default 1).
	"propose": func(s *script, td *datadriven.TestData) string {
		args := rafttest.Positional(td)
		if len(args) != 2 {
			s.t.Fatalf("%s: propose H NAME", td.Pos)
		}
		id, name := rafttest.ParseID(s.t, args[0]), args[1]
		records := 1
		td.MaybeScanArgs(s.t, "records", &records)
		p, err := s.d.Host(id).ProposeAsync(scriptGroup, kafkatest.Plain(records, int64(len(s.names))).Bytes())
		if err != nil {
			return err.Error()
		}
		s.props[name] = p
		s.names = append(s.names, name)
		return ""
	},
	// restart H: host H stops and starts its replica again on the same log (nothing is lost:
	// a clean restart, so the replica forgets who led).
	"restart": func(s *script, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		if err := s.d.Host(id).RemoveGroup(scriptGroup); err != nil {
			return err.Error()
		}
		s.addGroup(id)
		return ""
	},
	// crash H: host H loses power: its replica is gone with everything its disk had not
	// synced (unflushed entries, a commit index kept only in memory), and starts again on
	// what survived.
	"crash": func(s *script, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		if err := s.d.Host(id).RemoveGroup(scriptGroup); err != nil {
			return err.Error()
		}
		s.fs[id].Crash() // the old storage's handles stop working: it is dropped, not closed
		if err := s.open(id); err != nil {
			return err.Error()
		}
		s.addGroup(id)
		return ""
	},
	// wipe H: host H's replica is deleted with its data and created again empty, as a
	// joiner (no bootstrap), as a broker does for a replica a move adds.
	"wipe": func(s *script, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		if err := s.d.Host(id).RemoveGroup(scriptGroup); err != nil {
			return err.Error()
		}
		s.ls[id].Close()
		s.fs[id] = storage.NewMemFS()
		if err := s.open(id); err != nil {
			return err.Error()
		}
		s.joiners[id] = true
		s.addGroup(id)
		return ""
	},
	// conf-change H enter-joint|leave-joint|simple [add=ID...] [remove=ID...]
	// [learner=ID...]: host H (leading) proposes entering a joint configuration with the
	// changes, leaving it, or one change on its own (the proposal runs at once: see
	// raft.DrivenHost.ProposeConfChange).
	"conf-change": func(s *script, td *datadriven.TestData) string {
		args := rafttest.Positional(td)
		if len(args) != 2 {
			s.t.Fatalf("%s: conf-change H enter-joint|leave-joint", td.Pos)
		}
		cc := &pb.ConfChangeV2{}
		switch args[1] {
		case "enter-joint":
			cc.Transition = pb.ConfChangeTransition_ConfChangeTransitionJointExplicit.Enum()
		case "leave-joint", "simple":
		default:
			s.t.Fatalf("%s: enter-joint, leave-joint or simple, not %q", td.Pos, args[1])
		}
		for _, c := range []struct {
			key string
			typ pb.ConfChangeType
		}{{"add", pb.ConfChangeType_ConfChangeAddNode}, {"remove", pb.ConfChangeType_ConfChangeRemoveNode},
			{"learner", pb.ConfChangeType_ConfChangeAddLearnerNode}} {
			if a, ok := td.Arg(c.key); ok {
				for _, id := range rafttest.ParseIDs(s.t, a.Vals) {
					cc.Changes = append(cc.Changes, &pb.ConfChangeSingle{Type: c.typ.Enum(), NodeId: new(id)})
				}
			}
		}
		return errString(s.d.Host(rafttest.ParseID(s.t, args[0])).ProposeConfChange(scriptGroup, cc))
	},
	// config [H...]: the configuration each host knows (incoming && outgoing when joint).
	"config": eachHost(func(s *script, id uint64) string {
		st, err := s.d.Host(id).Status(scriptGroup)
		if err != nil {
			return fmt.Sprintf("%d: %v", id, err)
		}
		c := fmt.Sprintf("%d: voters=%v", id, st.Voters)
		if len(st.VotersOutgoing) > 0 {
			c += fmt.Sprintf("&&%v", st.VotersOutgoing)
		}
		if len(st.Learners) > 0 {
			c += fmt.Sprintf(" learners=%v", st.Learners)
		}
		if len(st.LearnersNext) > 0 {
			c += fmt.Sprintf(" learners-next=%v", st.LearnersNext)
		}
		return c
	}),
	// join-gate [H...]: each host's join gate (campaign.go): open, or gated with its
	// floor (0: not yet learned), as persisted.
	"join-gate": eachHost(func(s *script, id uint64) string {
		gated, floor := s.ls[id].JoinGate()
		if !gated {
			return fmt.Sprintf("%d: open", id)
		}
		return fmt.Sprintf("%d: gated floor=%d", id, floor)
	}),
	// status [H...]: each host's role and boundaries.
	"status": eachHost((*script).status),
	// visible [H...]: what each host may serve (Status.LeaderVisible), beside its log end
	// and commit.
	"visible": eachHost(func(s *script, id uint64) string {
		st, err := s.d.Host(id).Status(scriptGroup)
		if err != nil {
			return fmt.Sprintf("%d: %v", id, err)
		}
		return fmt.Sprintf("%d: term=%d log-end=%d committed=%d leader-visible=%d", id, st.Term, st.LogEnd, st.Committed, st.LeaderVisible)
	}),
	// hard-state [H...]: the HardState each host has persisted.
	"hard-state": eachHost(func(s *script, id uint64) string {
		term, vote, commit := s.ls[id].HardState()
		return fmt.Sprintf("%d: term=%d vote=%d commit=%d", id, term, vote, commit)
	}),
	// ticking [H...]: whether each host ticks the group, or leaves it quiet (quiesce.go).
	// changes [H...]: how often each host's replica told its owner its status may have
	// moved (GroupConfig.OnChange) since the last changes.
	"changes": eachHost(func(s *script, id uint64) string {
		n := s.changes[id]
		s.changes[id] = 0
		return fmt.Sprintf("%d: %d", id, n)
	}),
	"ticking": eachHost(func(s *script, id uint64) string {
		return fmt.Sprintf("%d: %s", id, s.d.Host(id).Ticking(scriptGroup))
	}),
	// proposals: what each proposal's waiter sees, in the order proposed.
	"proposals": func(s *script, _ *datadriven.TestData) string {
		var out []string
		for _, n := range s.names {
			out = append(out, fmt.Sprintf("%s: %s", n, s.props[n].Reached()))
		}
		return strings.Join(out, "\n")
	},
}

// eachHost is a command that prints a line of f for each host it names (every host if none).
func eachHost(f func(s *script, id uint64) string) func(*script, *datadriven.TestData) string {
	return func(s *script, td *datadriven.TestData) string {
		var out []string
		for _, id := range s.d.HostArgs(td) {
			out = append(out, f(s, id))
		}
		return strings.Join(out, "\n")
	}
}

// reset closes the hosts of a previous scenario and starts n new ones, each with a replica
// of the group on a log of its own.
func (s *script) reset(n int, voters []uint64, flushDelay time.Duration) {
	s.close()
	rate, maxMsg, backlog := s.learnerRate, s.maxMsg, s.electionBacklog
	s.d = rafttest.New(s.t, n, func(o *raft.HostOptions) {
		if rate > 0 {
			o.LearnerRate = func() int64 { return rate }
		}
		o.MaxSizePerMsg = maxMsg
		o.ElectionBacklog = backlog
	})
	s.voters, s.flushDelay = voters, flushDelay
	if s.voters == nil {
		s.voters = s.d.IDs()
	}
	s.ls, s.props, s.names = map[uint64]*raft.LogStorage{}, map[string]*raft.Proposal{}, nil
	s.changes = map[uint64]int{}
	s.fs = map[uint64]*storage.MemFS{}
	s.reconfigs = map[uint64]*raft.Reconfig{}
	for _, id := range s.d.IDs() {
		s.fs[id] = storage.NewMemFS()
		if err := s.open(id); err != nil {
			s.t.Fatal(err)
		}
		s.addGroup(id)
	}
}

// open opens host id's log on its disk.
func (s *script) open(id uint64) error {
	ls, err := raft.Open(storage.Options{FS: s.fs[id], Dir: "g", SegmentBytes: 4096})
	if err != nil {
		return err
	}
	s.ls[id] = ls
	return nil
}

func (s *script) addGroup(id uint64) {
	cfg := raft.GroupConfig{Storage: s.ls[id], BootstrapInLog: !s.atZero, Priority: s.priority}
	if !s.joiners[id] {
		cfg.Bootstrap = &pb.ConfState{Voters: s.voters}
	}
	share := s.shareVisible
	cfg.ShareVisible = func() bool { return share }
	cfg.OnChange = func() { s.changes[id]++ }
	if wait := s.flushDelay; wait > 0 {
		cfg.FlushDelay = func(_ int64, waited time.Duration) time.Duration { return wait - waited }
	}
	if err := s.d.Host(id).AddGroup(scriptGroup, cfg); err != nil {
		s.t.Fatal(err)
	}
}

func (s *script) close() {
	if s.d != nil {
		s.d.Close()
	}
}

func (s *script) status(id uint64) string {
	st, err := s.d.Host(id).Status(scriptGroup)
	if err != nil {
		return fmt.Sprintf("%d: %v", id, err)
	}
	role := strings.ToLower(strings.TrimPrefix(st.State.String(), "State"))
	out := fmt.Sprintf("%d: %s term=%d lead=%d log-end=%d flushed=%d", id, role, st.Term, st.Leader, st.LogEnd, st.Flushed)
	if role == "leader" {
		out += fmt.Sprintf(" majority-replicated=%d", st.MajorityReplicated)
	}
	return out + fmt.Sprintf(" committed=%d applied=%d", st.Committed, st.Applied)
}

func errString(err error) string {
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestScripts runs every script in testdata/ on a fresh driver.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &script{t: t}
		defer s.close()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if s.d == nil && td.Cmd != "add-hosts" {
				t.Fatalf("%s: add-hosts first", td.Pos)
			}
			return rafttest.Do(t, td, s.d, s, scriptCommands)
		})
	})
}
