package raft

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The commands of the scripts in testdata/ (datadriven format), run on the driver of
// driver_test.go. Each script opens with what it proves.

// driverCommands is what a script may say; each returns its output.
var driverCommands = map[string]func(d *driver, td *datadriven.TestData) string{
	// add-hosts N [voters=1,2,3] [write-caching=DURATION]: a new scenario of N hosts
	// (voters: all); with write-caching, appends wait that long before their fsync.
	"add-hosts": func(d *driver, td *datadriven.TestData) string {
		n, _ := strconv.Atoi(positional(d.t, td)[0])
		var delay time.Duration
		mode := "strict"
		if a, ok := td.Arg("write-caching"); ok {
			var err error
			if delay, err = time.ParseDuration(a.SingleVal(d.t)); err != nil {
				d.t.Fatal(err)
			}
			mode = "write caching " + delay.String()
		}
		var voters []uint64
		if a, ok := td.Arg("voters"); ok {
			voters = parseIDs(d.t, a.Vals)
		}
		d.reset(n, voters, delay)
		return fmt.Sprintf("%d hosts, voters %v, %s", n, d.voters, mode)
	},
	// campaign H: host H campaigns (handled at the next ready round).
	"campaign": func(d *driver, td *datadriven.TestData) string {
		return errString(d.hosts[hostArgs(d, td)[0]].Campaign(scriptGroup))
	},
	// propose H NAME [records=N]: host H proposes a batch of N records (default 1).
	"propose": func(d *driver, td *datadriven.TestData) string {
		args := positional(d.t, td)
		id, name := parseID(d.t, args[0]), args[1]
		records := 1
		td.MaybeScanArgs(d.t, "records", &records)
		p, err := d.hosts[id].ProposeAsync(scriptGroup, batch(records, int64(len(d.names))))
		if err != nil {
			return err.Error()
		}
		d.props[name] = p
		d.names = append(d.names, name)
		return ""
	},
	// process [H...]: ready handling on the hosts (all) until they have none; nothing is
	// delivered or fsynced.
	"process": eachHost(func(d *driver, id uint64) { d.processReady(id) }),
	// fsync H...: the hosts' flushers run (even if held) until their flush queues are empty.
	"fsync": eachHost(func(d *driver, id uint64) { d.fsync(id) }),
	// hold-fsync H... / release-fsync H...: stabilize leaves the hosts' flushes queued, or
	// runs them again.
	"hold-fsync":    eachHost(func(d *driver, id uint64) { d.held[id] = true }),
	"release-fsync": eachHost(func(d *driver, id uint64) { delete(d.held, id) }),
	// cut H... / heal H...: every batch to or from the hosts is dropped, or delivered again.
	"cut":  eachHost(func(d *driver, id uint64) { d.cut[id] = true }),
	"heal": eachHost(func(d *driver, id uint64) { delete(d.cut, id) }),
	// deliver [from=H] [to=H] [drop]: the matching batches in flight are delivered (or
	// dropped), one line each.
	"deliver": func(d *driver, td *datadriven.TestData) string {
		var from, to uint64
		td.MaybeScanArgs(d.t, "from", &from)
		td.MaybeScanArgs(d.t, "to", &to)
		return strings.Join(d.deliver(from, to, td.HasArg("drop")), "\n")
	},
	// tick [H...] [n=N] [stabilize]: the hosts' tickers run N rounds (default 1); with
	// stabilize, the cluster stabilizes after each round, else nothing else happens.
	"tick": func(d *driver, td *datadriven.TestData) string {
		n := 1
		td.MaybeScanArgs(d.t, "n", &n)
		for range n {
			for _, id := range hostArgs(d, td) {
				d.hosts[id].tickOnce()
			}
			if td.HasArg("stabilize") {
				d.stabilize()
			}
		}
		return ""
	},
	// ticking [H...]: whether each host ticks the group, or leaves it quiet (quiesce.go).
	"ticking": func(d *driver, td *datadriven.TestData) string {
		var out []string
		for _, id := range hostArgs(d, td) {
			out = append(out, fmt.Sprintf("%d: %s", id, d.ticking(id)))
		}
		return strings.Join(out, "\n")
	},
	// advance DURATION: the clock moves on, and write caching's delayed flushes fall due
	// (they are queued; an fsync or stabilize runs them).
	"advance": func(d *driver, td *datadriven.TestData) string {
		dur, err := time.ParseDuration(positional(d.t, td)[0])
		if err != nil {
			d.t.Fatal(err)
		}
		d.clock.advance(dur)
		return ""
	},
	// stabilize: see driver.stabilize.
	"stabilize": func(d *driver, _ *datadriven.TestData) string {
		d.stabilize()
		return ""
	},
	// restart H: host H stops and starts its replica again on the same log (nothing is lost:
	// a clean restart, so the replica forgets who led).
	"restart": func(d *driver, td *datadriven.TestData) string {
		id := hostArgs(d, td)[0]
		if err := d.hosts[id].RemoveGroup(scriptGroup); err != nil {
			return err.Error()
		}
		d.addGroup(id)
		return ""
	},
	// conf-change H enter-joint|leave-joint [add=ID...] [remove=ID...]: host H (leading)
	// proposes entering a joint configuration with the changes, or leaving it.
	"conf-change": func(d *driver, td *datadriven.TestData) string {
		args := positional(d.t, td)
		cc := &pb.ConfChangeV2{}
		switch args[1] {
		case "enter-joint":
			cc.Transition = pb.ConfChangeTransition_ConfChangeTransitionJointExplicit.Enum()
		case "leave-joint":
		default:
			d.t.Fatalf("%s: enter-joint or leave-joint, not %q", td.Pos, args[1])
		}
		for _, c := range []struct {
			key string
			typ pb.ConfChangeType
		}{{"add", pb.ConfChangeType_ConfChangeAddNode}, {"remove", pb.ConfChangeType_ConfChangeRemoveNode}} {
			key, typ := c.key, c.typ
			if a, ok := td.Arg(key); ok {
				for _, id := range parseIDs(d.t, a.Vals) {
					cc.Changes = append(cc.Changes, &pb.ConfChangeSingle{Type: typ.Enum(), NodeId: new(id)})
				}
			}
		}
		// Host.ProposeConfChange waits for a worker that a driven host does not have: the
		// proposal runs at the next ready round instead, and its error is reported then.
		var err error
		if e := d.hosts[parseID(d.t, args[0])].control(scriptGroup, func(rn *etcdraft.RawNode) {
			if rn != nil {
				err = rn.ProposeConfChange(cc)
			}
		}); e != nil {
			return e.Error()
		}
		d.processReady(parseID(d.t, args[0]))
		return errString(err)
	},
	// config [H...]: the configuration each host knows (incoming && outgoing when joint).
	"config": func(d *driver, td *datadriven.TestData) string {
		var out []string
		for _, id := range hostArgs(d, td) {
			st, err := d.hosts[id].Status(scriptGroup)
			if err != nil {
				out = append(out, fmt.Sprintf("%d: %v", id, err))
				continue
			}
			c := fmt.Sprintf("%d: voters=%v", id, st.Voters)
			if len(st.VotersOutgoing) > 0 {
				c += fmt.Sprintf("&&%v", st.VotersOutgoing)
			}
			out = append(out, c)
		}
		return strings.Join(out, "\n")
	},
	// status [H...]: each host's role and boundaries.
	"status": func(d *driver, td *datadriven.TestData) string {
		var out []string
		for _, id := range hostArgs(d, td) {
			out = append(out, d.status(id))
		}
		return strings.Join(out, "\n")
	},
	// hard-state [H...]: the HardState each host has persisted.
	"hard-state": func(d *driver, td *datadriven.TestData) string {
		var out []string
		for _, id := range hostArgs(d, td) {
			term, vote, commit := d.ls[id].HardState()
			out = append(out, fmt.Sprintf("%d: term=%d vote=%d commit=%d", id, term, vote, commit))
		}
		return strings.Join(out, "\n")
	},
	// proposals: what each proposal's waiter sees, in the order proposed.
	"proposals": func(d *driver, _ *datadriven.TestData) string {
		var out []string
		for _, n := range d.names {
			out = append(out, describeProposal(n, d.props[n]))
		}
		return strings.Join(out, "\n")
	},
}

// eachHost is a command that does f for each host it names (every host if none).
func eachHost(f func(d *driver, id uint64)) func(*driver, *datadriven.TestData) string {
	return func(d *driver, td *datadriven.TestData) string {
		for _, id := range hostArgs(d, td) {
			f(d, id)
		}
		return ""
	}
}

func (d *driver) handle(t *testing.T, td *datadriven.TestData) string {
	d.t = t
	cmd, ok := driverCommands[td.Cmd]
	if !ok {
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	if d.clock == nil && td.Cmd != "add-hosts" {
		t.Fatalf("%s: add-hosts first", td.Pos)
	}
	out := cmd(d, td)
	if out != "" {
		out += "\n"
	}
	return out
}

// flagArgs are the arguments that are flags, not positional values.
var flagArgs = map[string]bool{"drop": true, "stabilize": true}

// positional returns the arguments without a value (datadriven parses "propose 1 p1" as
// keys "1" and "p1").
func positional(t testing.TB, td *datadriven.TestData) []string {
	var out []string
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 && !flagArgs[a.Key] {
			out = append(out, a.Key)
		}
	}
	return out
}

// hostArgs returns the hosts a command names, or every host if it names none.
func hostArgs(d *driver, td *datadriven.TestData) []uint64 {
	var ids []uint64
	for _, a := range positional(d.t, td) {
		ids = append(ids, parseID(d.t, a))
	}
	if len(ids) == 0 {
		return slices.Clone(d.ids)
	}
	return ids
}

func parseID(t testing.TB, s string) uint64 {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("not a host id: %q", s)
	}
	return id
}

// parseIDs reads a list of host ids, written id=(1,2) or id=1,2.
func parseIDs(t testing.TB, vals []string) []uint64 {
	var ids []uint64
	for _, v := range vals {
		for _, f := range strings.Split(v, ",") {
			ids = append(ids, parseID(t, f))
		}
	}
	return ids
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
		d := newDriver(t)
		defer d.close()
		datadriven.RunTest(t, path, d.handle)
	})
}
