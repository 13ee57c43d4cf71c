package rafttest

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// The script commands every driven script may use: the network, the disks and the clock.
// A package's scripts add their own (building the hosts and groups, proposing, printing
// what they assert) and run both through Do. H is a host id; a command that names no
// host applies to every host.
var commands = map[string]func(d *Driver, td *datadriven.TestData) string{
	// process [H...]: ready handling on the hosts until they have none; nothing is
	// delivered or fsynced.
	"process": eachHost(func(d *Driver, id uint64) { d.Process(id) }),
	// fsync [H...]: the hosts' flushers run (even if held) until their flush queues are empty.
	"fsync": eachHost(func(d *Driver, id uint64) { d.Fsync(id) }),
	// hold-fsync H... / release-fsync H...: stabilize leaves the hosts' flushes queued, or
	// runs them again.
	"hold-fsync":    eachHost(func(d *Driver, id uint64) { d.Hold(id, true) }),
	"release-fsync": eachHost(func(d *Driver, id uint64) { d.Hold(id, false) }),
	// cut H... / heal H...: every batch to or from the hosts is dropped, or delivered again.
	"cut":  eachHost(func(d *Driver, id uint64) { d.Cut(id, true) }),
	"heal": eachHost(func(d *Driver, id uint64) { d.Cut(id, false) }),
	// deliver [from=H] [to=H] [drop]: the matching batches in flight are delivered (or
	// dropped), one line each.
	"deliver": func(d *Driver, td *datadriven.TestData) string {
		var from, to uint64
		td.MaybeScanArgs(d.t, "from", &from)
		td.MaybeScanArgs(d.t, "to", &to)
		return strings.Join(d.Deliver(from, to, td.HasArg("drop")), "\n")
	},
	// tick [H...] [n=N] [stabilize]: the hosts' tickers run N rounds (default 1); with
	// stabilize, the hosts stabilize after each round, else nothing else happens.
	"tick": func(d *Driver, td *datadriven.TestData) string {
		n := 1
		td.MaybeScanArgs(d.t, "n", &n)
		ids := d.HostArgs(td, "stabilize")
		for range n {
			d.Tick(ids...)
			if td.HasArg("stabilize") {
				d.Stabilize()
			}
		}
		return ""
	},
	// advance DURATION: the clock moves on, and write caching's delayed flushes fall due
	// (they are queued; an fsync or stabilize runs them).
	"advance": func(d *Driver, td *datadriven.TestData) string {
		args := Positional(td)
		if len(args) != 1 {
			d.t.Fatalf("%s: advance DURATION", td.Pos)
		}
		dur, err := time.ParseDuration(args[0])
		if err != nil {
			d.t.Fatalf("%s: %v", td.Pos, err)
		}
		d.clock.Advance(dur)
		return ""
	},
	// traffic: what each link carried since the last traffic (see Driver.Traffic).
	"traffic": func(d *Driver, _ *datadriven.TestData) string {
		return strings.Join(d.Traffic(), "\n")
	},
	// stabilize: see Driver.Stabilize.
	"stabilize": func(d *Driver, _ *datadriven.TestData) string {
		d.Stabilize()
		return ""
	},
}

// eachHost is a command that does f for each host it names (every host if none).
func eachHost(f func(d *Driver, id uint64)) func(*Driver, *datadriven.TestData) string {
	return func(d *Driver, td *datadriven.TestData) string {
		for _, id := range d.HostArgs(td) {
			f(d, id)
		}
		return ""
	}
}

// Do runs one directive of a script: the package's own command cmds[td.Cmd] on s if there
// is one, else the driver's (d nil: the script has not built its hosts yet, which fails
// the test). An unknown command fails the test. The output gets the final newline
// datadriven expects.
func Do[S any](t testing.TB, td *datadriven.TestData, d *Driver, s S, cmds map[string]func(S, *datadriven.TestData) string) string {
	var out string
	if cmd, ok := cmds[td.Cmd]; ok {
		out = cmd(s, td)
	} else if cmd, ok := commands[td.Cmd]; !ok {
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	} else if d == nil {
		t.Fatalf("%s: %s before the script built its hosts", td.Pos, td.Cmd)
	} else {
		out = cmd(d, td)
	}
	if out != "" {
		out += "\n"
	}
	return out
}

// Positional returns a directive's arguments that have no value and are not one of flags
// (datadriven parses "propose 1 p1" as the keys "1" and "p1").
func Positional(td *datadriven.TestData, flags ...string) []string {
	var out []string
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 && !slices.Contains(flags, a.Key) {
			out = append(out, a.Key)
		}
	}
	return out
}

// HostCount reads the number of hosts a scenario-building directive ("add-hosts 3") names:
// its one positional argument other than flags.
func HostCount(t testing.TB, td *datadriven.TestData, flags ...string) int {
	args := Positional(td, flags...)
	if len(args) != 1 {
		t.Fatalf("%s: %s N", td.Pos, td.Cmd)
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		t.Fatalf("%s: %s N: not a number of hosts: %q", td.Pos, td.Cmd, args[0])
	}
	return n
}

// HostArg returns the one host a directive names ("campaign 2").
func (d *Driver) HostArg(td *datadriven.TestData) uint64 {
	args := Positional(td)
	if len(args) != 1 {
		d.t.Fatalf("%s: %s H", td.Pos, td.Cmd)
	}
	return ParseID(d.t, args[0])
}

// HostArgs returns the hosts a directive names (its positional arguments other than
// flags), or every host if it names none.
func (d *Driver) HostArgs(td *datadriven.TestData, flags ...string) []uint64 {
	args := Positional(td, flags...)
	if len(args) == 0 {
		return slices.Clone(d.ids)
	}
	return ParseIDs(d.t, args)
}

// ParseID reads one host id.
func ParseID(t testing.TB, s string) uint64 {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		t.Fatalf("not a host id: %q", s)
	}
	return id
}

// ParseIDs reads a list of host ids, written as separate values (id=(1,2), or positional
// arguments) or joined by commas (id=1,2).
func ParseIDs(t testing.TB, vals []string) []uint64 {
	var ids []uint64
	for _, v := range vals {
		for _, f := range strings.Split(v, ",") {
			ids = append(ids, ParseID(t, f))
		}
	}
	return ids
}
