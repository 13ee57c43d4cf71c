package partition

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/raft/rafttest"
	"github.com/cairn-io/cairn/internal/storage"
)

// The scripts in testdata/ (datadriven format) run one partition, a replica on each host
// of a rafttest driver: the driver's commands (rafttest/commands.go) step the network,
// the disks and the clock, which is the partitions' clock too (the ISR's lag window reads
// it); the commands here produce, alter the topic and print what a client and the admin
// API would see. Each script opens with what it proves.
//
// Produce's acks=all answer is not waited for in the background: await asks for it once
// the script has stepped the hosts to where it is decided, expire asks for the answer its
// timeout would give now. After every command each replica refreshes its boundaries from
// its group, so what the next command sees is the same on every run; but for advance, since
// time passing moves no group, and a real replica's refresher runs only when its group moves.

// replicaScript is one script's state: the driver of its current scenario and a replica on
// each of its hosts.
type replicaScript struct {
	t        testing.TB
	d        *rafttest.Driver
	parts    map[uint64]*Partition
	disks    map[uint64]storage.FS // each replica's, kept across a restart
	produced map[string]*production
	racks    Racks         // the brokers' declared racks (nil: the scenario declared none)
	lagMax   time.Duration // the replicas' replica.lag.time.max.ms (0: the default)
}

// production is one Produce call: its immediate result and, for acks=all, its wait.
type production struct {
	res      ProduceResult
	wait     func(context.Context) ProduceResult
	answered bool // a producer hears one answer: await or expire, once
}

var replicaCommands = map[string]func(s *replicaScript, td *datadriven.TestData) string{
	// add-replicas N [write-caching] [min-insync=M] [racks=R1,R2,...] [min-insync-racks=K]
	// [replica-lag=D]: a new scenario of N hosts, each with a replica of partition t-0 (all
	// of them voters), with the topic's defaults but for write.caching, min.insync.replicas
	// (default 1) and min.insync.racks (default 1, off); host i's broker declared rack Ri
	// (none if empty or not given); the brokers' replica.lag.time.max.ms is the duration D
	// (default 30s). Host 1 is elected, and the hosts stabilize (under write caching: until
	// the new term's entry is flushed too).
	"add-replicas": func(s *replicaScript, td *datadriven.TestData) string {
		n := rafttest.HostCount(s.t, td, "write-caching")
		cfg := defaultConfig()
		cfg.WriteCaching = td.HasArg("write-caching")
		cfg.MinInsyncReplicas = 1
		td.MaybeScanArgs(s.t, "min-insync", &cfg.MinInsyncReplicas)
		td.MaybeScanArgs(s.t, "min-insync-racks", &cfg.MinInsyncRacks)
		s.racks = s.racksArg(td)
		s.lagMax = 0
		if td.HasArg("replica-lag") {
			var lag string
			td.ScanArgs(s.t, "replica-lag", &lag)
			d, err := time.ParseDuration(lag)
			if err != nil {
				s.t.Fatalf("%s: replica-lag: %v", td.Pos, err)
			}
			s.lagMax = d
		}
		s.reset(n, cfg)
		mode := "strict"
		if cfg.WriteCaching {
			mode = fmt.Sprintf("write caching (flush.ms=%d)", cfg.FlushMs)
		}
		out := fmt.Sprintf("%d replicas of t-0, %s, min.insync.replicas=%d", n, mode, cfg.MinInsyncReplicas)
		if td.HasArg("racks") || td.HasArg("min-insync-racks") {
			out += fmt.Sprintf(", racks %s, min.insync.racks=%d", s.rackList(), cfg.MinInsyncRacks)
		}
		if s.lagMax > 0 {
			out += fmt.Sprintf(", replica.lag.time.max.ms=%d", s.lagMax.Milliseconds())
		}
		return out + "; " + s.leaderLine()
	},
	// set-racks racks=R1,R2,...: the brokers' declared racks change at run time (a broker
	// re-registered with another rack), on every replica, as the broker hands them on.
	"set-racks": func(s *replicaScript, td *datadriven.TestData) string {
		s.racks = s.racksArg(td)
		for _, id := range s.d.IDs() {
			s.parts[id].SetRacks(s.racks)
		}
		return "racks " + s.rackList()
	},
	// campaign H: host H's replica campaigns (handled at the next ready round).
	"campaign": func(s *replicaScript, td *datadriven.TestData) string {
		if err := s.d.Host(s.d.HostArg(td)).Campaign(scriptGroup); err != nil {
			return err.Error()
		}
		return ""
	},
	// restart H: host H's replica closes and opens again on the same log (a clean
	// restart: nothing is lost, and the replica forgets who led).
	"restart": func(s *replicaScript, td *datadriven.TestData) string {
		id := s.d.HostArg(td)
		cfg := s.part(id).Config()
		if err := s.parts[id].Close(); err != nil {
			return err.Error()
		}
		s.open(id, cfg)
		return ""
	},
	// produce H NAME [acks=all|1] [records=N] [producer=PID seq=N]: host H's replica is
	// handed a batch of N records (default 1) at acks all (the default) or 1, from an
	// idempotent producer PID (epoch 0) from sequence seq if given; it prints the answer,
	// or for an admitted acks=all batch where it was appended (await or expire gives the
	// answer). Host H's ready handling runs until Produce returns (it waits for the
	// leader's own append); nothing is delivered or fsynced.
	"produce": func(s *replicaScript, td *datadriven.TestData) string {
		args := rafttest.Positional(td)
		if len(args) != 2 {
			s.t.Fatalf("%s: produce H NAME", td.Pos)
		}
		id, name := rafttest.ParseID(s.t, args[0]), args[1]
		if _, ok := s.produced[name]; ok {
			s.t.Fatalf("%s: %s produced already", td.Pos, name)
		}
		acks := int16(-1)
		if a, ok := td.Arg("acks"); ok {
			switch v := a.SingleVal(s.t); v {
			case "all":
			case "1":
				acks = 1
			default:
				s.t.Fatalf("%s: acks all or 1, not %q", td.Pos, v)
			}
		}
		records := 1
		td.MaybeScanArgs(s.t, "records", &records)
		b := kafkatest.Plain(records, 1000)
		if td.HasArg("producer") {
			td.ScanArgs(s.t, "producer", &b.ProducerID)
			td.ScanArgs(s.t, "seq", &b.BaseSequence)
			b.ProducerEpoch = 0
		}
		batch := b.Bytes()
		pr := &production{}
		p := s.part(id)
		s.d.ProcessWhile(id, func() { pr.res, pr.wait = p.Produce(batch, acks) })
		s.produced[name] = pr
		if pr.wait != nil {
			return fmt.Sprintf("%s: appended at offset %d; acks=all waits", name, pr.res.BaseOffset)
		}
		return name + ": " + answer(pr.res)
	},
	// marker H NAME pid=N epoch=N outcome=commit|abort [coord=N]: host H's replica is asked to
	// write a transaction marker (WriteMarker, always at acks=all strength). It prints the
	// answer if the marker was refused before it was appended, else where it was appended
	// (await gives the answer). Host H's ready handling runs until one of them happens.
	"marker": func(s *replicaScript, td *datadriven.TestData) string {
		args := rafttest.Positional(td)
		if len(args) != 2 {
			s.t.Fatalf("%s: marker H NAME", td.Pos)
		}
		id, name := rafttest.ParseID(s.t, args[0]), args[1]
		if _, ok := s.produced[name]; ok {
			s.t.Fatalf("%s: %s produced already", td.Pos, name)
		}
		var pid int64
		var epoch int16
		var coord int32
		td.ScanArgs(s.t, "pid", &pid)
		td.ScanArgs(s.t, "epoch", &epoch)
		td.MaybeScanArgs(s.t, "coord", &coord)
		var outcome string
		td.ScanArgs(s.t, "outcome", &outcome)
		if outcome != "commit" && outcome != "abort" {
			s.t.Fatalf("%s: outcome commit or abort, not %q", td.Pos, outcome)
		}
		p := s.part(id)
		end := p.log.LogEndOffset()
		done := make(chan ProduceResult, 1)
		// The script's answer is taken by await, at the latest when the scenario closes
		// the replica (a closed replica's waiters end).
		go func() {
			done <- p.WriteMarker(context.Background(), pid, epoch, outcome == "commit", coord)
		}()
		var early *ProduceResult
		s.d.ProcessWhile(id, func() {
			for p.log.LogEndOffset() == end {
				select {
				case r := <-done:
					early = &r
					return
				default:
					runtime.Gosched()
				}
			}
		})
		if early != nil {
			s.produced[name] = &production{res: *early}
			return name + ": " + answer(*early)
		}
		s.produced[name] = &production{wait: func(ctx context.Context) ProduceResult {
			select {
			case r := <-done:
				return r
			case <-ctx.Done():
				return failed(kerr.RequestTimedOut, "the marker was not acknowledged in time")
			}
		}}
		return fmt.Sprintf("%s: appended at offset %d; waits for acks=all", name, end)
	},
	// await NAME: the acks=all answer NAME's producer gets, which the steps so far must
	// have decided (acknowledged, or failed): it fails the test if the batch's waiter
	// would still wait.
	"await": func(s *replicaScript, td *datadriven.TestData) string {
		name, pr := s.production(td)
		ctx, cancel := context.WithTimeout(context.Background(), awaitGuard)
		defer cancel()
		res := pr.wait(ctx)
		if ctx.Err() != nil {
			s.t.Fatalf("%s: %s's waiter still waits (expire gives its timeout's answer)", td.Pos, name)
		}
		return name + ": " + answer(res)
	},
	// expire NAME: the answer NAME's producer gets if its request times out now, with the
	// waiter still waiting (acknowledged if it is no longer waiting). A waiter whose
	// proposal failed is for await: its failure and its timeout would race.
	"expire": func(s *replicaScript, td *datadriven.TestData) string {
		name, pr := s.production(td)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return name + ": " + answer(pr.wait(ctx))
	},
	// alter [min-insync=M] [min-insync-racks=K] [write-caching=true|false]: the topic's
	// configuration changes at run time on every replica, as IncrementalAlterConfigs
	// changes it.
	"alter": func(s *replicaScript, td *datadriven.TestData) string {
		for _, id := range s.d.IDs() {
			cfg := s.parts[id].Config()
			td.MaybeScanArgs(s.t, "min-insync", &cfg.MinInsyncReplicas)
			td.MaybeScanArgs(s.t, "min-insync-racks", &cfg.MinInsyncRacks)
			td.MaybeScanArgs(s.t, "write-caching", &cfg.WriteCaching)
			s.parts[id].SetConfig(cfg)
		}
		return ""
	},
	// boundaries [H...]: each replica's role and boundaries (DESIGN.md §1).
	"boundaries": func(s *replicaScript, td *datadriven.TestData) string {
		var out []string
		for _, id := range s.d.HostArgs(td) {
			b := s.parts[id].Boundaries()
			role := "follower"
			if b.IsLeader {
				role = "leader"
			}
			out = append(out, fmt.Sprintf("%d: %s epoch=%d log-end=%d flushed=%d majority-replicated=%d committed=%d last-visible=%d",
				id, role, b.LeaderEpoch, b.LogEnd, b.Flushed, b.MajorityReplicated, b.Committed, b.LastVisible))
		}
		return strings.Join(out, "\n")
	},
	// isr: the leader's in-sync replicas and the effective min.insync.replicas, as
	// Metadata and the metrics report them; where the scenario declared racks, the racks
	// the ISR spans against min.insync.racks too (under or at it, as the rack metrics say).
	"isr": func(s *replicaScript, _ *datadriven.TestData) string {
		var out []string
		for _, id := range s.d.IDs() {
			p := s.parts[id]
			if isr, need, voters, ok := p.InsyncState(); ok {
				line := fmt.Sprintf("%d leads: isr=%v (%d of %d voters), min.insync.replicas=%d", id, p.ISR(), isr, voters, need)
				if st, ok := p.RackState(); ok && s.racks != nil {
					line += fmt.Sprintf(", racks=%v (%d), min.insync.racks=%d%s", st.ISRRacks, len(st.ISRRacks), st.MinRacks, rackHealth(st))
				}
				out = append(out, line)
			}
		}
		if len(out) == 0 {
			return "no replica leads"
		}
		return strings.Join(out, "\n")
	},
}

// rackHealth is the rack metrics' view of a RackState: under or at min.insync.racks.
func rackHealth(st RackState) string {
	switch {
	case st.Under:
		return " (under)"
	case st.At:
		return " (at)"
	}
	return ""
}

// racksArg reads a scenario's racks=R1,R2,... (host i's broker declared Ri; empty: none).
func (s *replicaScript) racksArg(td *datadriven.TestData) Racks {
	arg, ok := td.Arg("racks")
	if !ok {
		return nil
	}
	racks := Racks{}
	for i, r := range strings.Split(arg.SingleVal(s.t), ",") {
		if r != "" {
			racks[uint64(i+1)] = r
		}
	}
	return racks
}

// rackList prints each host's declared rack, "-" for none: [a a b - c].
func (s *replicaScript) rackList() string {
	var out []string
	for _, id := range s.d.IDs() {
		r := s.racks[id]
		if r == "" {
			r = "-"
		}
		out = append(out, r)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// awaitGuard bounds await, which returns at once when the script has decided the answer:
// it is reached only by a script that awaits an undecided one.
const awaitGuard = 10 * time.Second

// answer is a Produce answer as a client sees it.
func answer(r ProduceResult) string {
	if r.Err != nil {
		return fmt.Sprintf("%s: %s", r.Err.Message, r.Msg)
	}
	return fmt.Sprintf("acknowledged at offset %d", r.BaseOffset)
}

func (s *replicaScript) production(td *datadriven.TestData) (string, *production) {
	args := rafttest.Positional(td)
	if len(args) != 1 {
		s.t.Fatalf("%s: %s NAME", td.Pos, td.Cmd)
	}
	pr, ok := s.produced[args[0]]
	if !ok || pr.wait == nil {
		s.t.Fatalf("%s: %s is not an admitted acks=all produce", td.Pos, args[0])
	}
	if pr.answered {
		s.t.Fatalf("%s: %s was answered already", td.Pos, args[0])
	}
	pr.answered = true
	return args[0], pr
}

func (s *replicaScript) part(id uint64) *Partition {
	p, ok := s.parts[id]
	if !ok {
		s.t.Fatalf("no replica on host %d", id)
	}
	return p
}

// scriptGroup is the partition's Raft group on every host.
const scriptGroup = 1

// reset closes the replicas and hosts of a previous scenario and starts n new ones.
func (s *replicaScript) reset(n int, cfg config.TopicConfig) {
	s.close()
	s.d = rafttest.New(s.t, n)
	s.parts, s.disks, s.produced = map[uint64]*Partition{}, map[uint64]storage.FS{}, map[string]*production{}
	for _, id := range s.d.IDs() {
		s.disks[id] = storage.NewMemFS()
		s.open(id, cfg)
	}
	s.d.Stabilize() // host 1, the preferred leader of a new group, campaigned in Open
	if cfg.WriteCaching {
		s.d.Clock().Advance(time.Duration(cfg.FlushMs) * time.Millisecond)
		s.d.Stabilize()
	}
	s.refresh()
}

// open opens host id's replica on its disk.
func (s *replicaScript) open(id uint64, cfg config.TopicConfig) {
	ls, err := raft.Open(storage.Options{FS: s.disks[id], Dir: "/p"})
	if err != nil {
		s.t.Fatal(err)
	}
	p, err := Open(Options{Topic: "t", Partition: 0, Storage: ls, Host: s.d.Host(id).Host, Group: scriptGroup, Self: id,
		Replicas: s.d.IDs(), Config: cfg, Racks: s.racks, ReplicaLagMax: s.lagMax, Clock: s.d.Clock().Now, steppedRefresh: true})
	if err != nil {
		s.t.Fatal(err)
	}
	s.parts[id] = p
}

func (s *replicaScript) leaderLine() string {
	for _, id := range s.d.IDs() {
		if b := s.parts[id].Boundaries(); b.IsLeader {
			return fmt.Sprintf("%d leads in epoch %d", id, b.LeaderEpoch)
		}
	}
	return "no replica leads"
}

// refresh brings every replica's boundaries up to its group, as its refresher does soon
// after the group moves: the next command sees them settled.
func (s *replicaScript) refresh() {
	for _, id := range s.d.IDs() {
		s.parts[id].refreshIfSignalled()
	}
}

func (s *replicaScript) close() {
	if s.d == nil {
		return
	}
	for _, id := range s.d.IDs() {
		s.parts[id].Close()
	}
	s.d.Close()
}

// TestReplicaScripts runs every script in testdata/ on a fresh driver, except those of
// testdata/txnindex/, which step the transaction index alone (TestTxnIndexScript), and of
// testdata/txnwrite/, which run on one sole-voter replica (TestTxnWriteScript).
func TestReplicaScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		switch filepath.Base(filepath.Dir(path)) {
		case "txnindex":
			t.Skip("a transaction index script")
		case "txnwrite":
			t.Skip("a transactional write script")
		}
		s := &replicaScript{t: t}
		defer s.close()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if s.d == nil && td.Cmd != "add-replicas" {
				t.Fatalf("%s: add-replicas first", td.Pos)
			}
			out := rafttest.Do(t, td, s.d, s, replicaCommands)
			if td.Cmd == "advance" {
				// Time passes with the brokers' tickers running: the hosts that are not cut
				// have heard from each other. Time alone moves no group, so no refresher runs.
				s.d.HearAll()
			} else {
				s.refresh()
			}
			return out
		})
	})
}
