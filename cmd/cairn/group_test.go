package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// runGroupCLI is runCLI with `cairn group` wired into the root as well.
func runGroupCLI(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := newTestRoot()
	root.AddCommand(newGroupCmd())
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(""))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

func mustGroup(t *testing.T, args ...string) string {
	t.Helper()
	r := runGroupCLI(t, args...)
	if r.err != nil {
		t.Fatalf("cairn %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.out, r.errOut)
	}
	return r.out
}

func wantGroupErr(t *testing.T, args []string, subs ...string) result {
	t.Helper()
	r := runGroupCLI(t, args...)
	if r.err == nil {
		t.Fatalf("cairn %s: want an error, got none\nstdout:\n%s", strings.Join(args, " "), r.out)
	}
	for _, s := range subs {
		if !strings.Contains(r.err.Error(), s) {
			t.Fatalf("cairn %s: error %q does not contain %q\nstdout:\n%s", strings.Join(args, " "), r.err, s, r.out)
		}
	}
	return r
}

// waitFor polls cond until it holds, failing the test with cond's last
// description of the state if it does not within 30 seconds.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last state: %s", what, state)
		}
		<-tick.C
	}
}

func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// joinGroup starts a kgo consumer in group consuming topics; it does not
// commit on its own. instanceID makes it a static member.
func joinGroup(t *testing.T, addr, group, clientID, instanceID string, topics ...string) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
	}
	if instanceID != "" {
		opts = append(opts, kgo.InstanceID(instanceID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// waitGroup waits until group is in state with n members and, when assigned
// is positive, that many partitions assigned across them.
func waitGroup(t *testing.T, adm *kadm.Client, group, state string, n, assigned int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("group %s %s with %d members", group, state, n), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		d := ds[group]
		got := 0
		for _, ps := range d.AssignedPartitions() {
			got += len(ps)
		}
		desc := fmt.Sprintf("state %q, %d members, %d partitions assigned, err %v", d.State, len(d.Members), got, d.Err)
		return d.Err == nil && d.State == state && len(d.Members) == n && (assigned <= 0 || got == assigned), desc
	})
}

// commitInGroup commits offsets for topic through a member of the group, as a
// consumer does (inside the group generation).
func commitInGroup(t *testing.T, cl *kgo.Client, topic string, offsets map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := make(map[int32]kgo.EpochOffset)
	for p, o := range offsets {
		m[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var cerr error
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: m},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 {
						cerr = fmt.Errorf("partition %d: error code %d", rp.Partition, rp.ErrorCode)
					}
				}
			}
		})
	if cerr != nil {
		t.Fatalf("committing in the group: %v", cerr)
	}
}

// committed returns the group's committed offsets of topic (absent: none).
func committed(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetching offsets of %s: %v", group, err)
	}
	out := make(map[int32]int64)
	for p, o := range os[topic] {
		if o.Err != nil {
			t.Fatalf("fetching offsets of %s: partition %d: %v", group, p, o.Err)
		}
		if o.At >= 0 {
			out[p] = o.At
		}
	}
	return out
}

func wantCommitted(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	if got := committed(t, adm, group, topic); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("committed offsets of %s on %s = %v, want %v", group, topic, got, want)
	}
}

// row matches a table row by its whitespace-separated cells.
func hasRow(out string, cells ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(cells, " ") {
			return true
		}
	}
	return false
}

func TestGroupListDescribeDelete(t *testing.T) {
	addr := newFakeCluster(t, 3, "orders", "other")
	produceLines(t, addr, "orders", 0, "a", "b", "c", "d", "e")
	produceLines(t, addr, "orders", 1, "x", "y", "z")
	adm := newAdmin(t, addr)

	// Two members: one static (instance id), one dynamic.
	static := joinGroup(t, addr, "g", "cons-a", "static-a", "orders")
	dynamic := joinGroup(t, addr, "g", "cons-b", "", "orders")
	waitGroup(t, adm, "g", "Stable", 2, 3)
	commitInGroup(t, static, "orders", map[int32]int64{0: 2})

	out := mustGroup(t, "group", "list", "-b", addr)
	if !hasRow(out, "GROUP", "STATE", "PROTOCOL-TYPE", "MEMBERS") || !hasRow(out, "g", "Stable", "consumer", "2") {
		t.Errorf("list:\n%s", out)
	}

	out = mustGroup(t, "group", "describe", "-b", addr, "g")
	for _, want := range []string{"Group: g\n", "State: Stable\n", "Protocol type: consumer\n", "Members: 2\n", "Coordinator: 0 (127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)^Protocol: -$`).MatchString(out) {
		t.Errorf("describe of a stable group shows no protocol:\n%s", out)
	}
	// Member rows: id, instance id, client id, host, assignment. The two
	// assignments are disjoint and cover the topic.
	memberRow := regexp.MustCompile(`(?m)^(\S+)\s+(\S+)\s+(cons-[ab])\s+(\S+)\s+(.*)$`)
	rows := memberRow.FindAllStringSubmatch(out, -1)
	if len(rows) != 2 {
		t.Fatalf("describe: want 2 member rows, got %d:\n%s", len(rows), out)
	}
	memberOf := make(map[int32]string) // partition -> member id
	for _, r := range rows {
		id, inst, client, assignment := r[1], r[2], r[3], strings.TrimSpace(r[5])
		if wantInst := map[string]string{"cons-a": "static-a", "cons-b": "-"}[client]; inst != wantInst {
			t.Errorf("member %s: instance id %q, want %q", client, inst, wantInst)
		}
		m := regexp.MustCompile(`^orders\[([0-9,]+)\]$`).FindStringSubmatch(assignment)
		if m == nil {
			t.Fatalf("member %s: assignment %q not decoded", client, assignment)
		}
		for _, f := range strings.Split(m[1], ",") {
			p, _ := strconv.Atoi(f)
			if _, dup := memberOf[int32(p)]; dup {
				t.Errorf("partition %d assigned twice:\n%s", p, out)
			}
			memberOf[int32(p)] = id
		}
	}
	if len(memberOf) != 3 {
		t.Errorf("assignments cover %v, want partitions 0-2:\n%s", memberOf, out)
	}
	// Lag: p0 committed 2 of 5; p1 nothing committed, 3 records; p2 empty.
	for _, want := range [][]string{
		{"TOPIC", "PARTITION", "MEMBER-ID", "COMMITTED", "LOG-END", "LAG"},
		{"orders", "0", memberOf[0], "2", "5", "3"},
		{"orders", "1", memberOf[1], "-", "3", "3"},
		{"orders", "2", memberOf[2], "-", "0", "0"},
	} {
		if !hasRow(out, want...) {
			t.Errorf("describe lacks row %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "Total lag: 6\n") {
		t.Errorf("describe total lag:\n%s", out)
	}

	// A group with members can be neither deleted nor seeked.
	r := wantGroupErr(t, []string{"group", "delete", "-b", addr, "g"}, "1 of 1 groups failed")
	if !strings.Contains(r.out, "g: error: NON_EMPTY_GROUP") || !strings.Contains(r.out, "stop its consumers") {
		t.Errorf("delete of a non-empty group: %q", r.out)
	}
	wantGroupErr(t, []string{"group", "seek", "-b", addr, "g", "--topic", "orders", "--to-earliest"},
		"group g is Stable with 2 member(s)", "only be reset while the group is Empty", "stop its consumers first",
		"static members, those with an instance id, stay until")
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 2})

	// The dynamic member leaves on close; the static one does not, so
	// remove it the way an operator would.
	dynamic.Close()
	static.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adm.LeaveGroup(ctx, kadm.LeaveGroup("g").InstanceIDs("static-a")); err != nil {
		t.Fatalf("removing the static member: %v", err)
	}
	waitGroup(t, adm, "g", "Empty", 0, 0)

	out = mustGroup(t, "group", "list", "-b", addr)
	if !hasRow(out, "g", "Empty", "consumer", "0") {
		t.Errorf("list of the empty group:\n%s", out)
	}
	out = mustGroup(t, "group", "describe", "-b", addr, "g")
	for _, want := range [][]string{
		{"orders", "0", "-", "2", "5", "3"},
		{"orders", "1", "-", "-", "3", "3"},
		{"orders", "2", "-", "-", "0", "0"},
	} {
		if !hasRow(out, want...) {
			t.Errorf("describe of the empty group lacks row %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "State: Empty\n") || !strings.Contains(out, "Members: 0\n") || strings.Contains(out, "MEMBER-ID\tINSTANCE-ID") {
		t.Errorf("describe of the empty group:\n%s", out)
	}

	// Describing several groups shows those that exist and fails for
	// the rest.
	r = wantGroupErr(t, []string{"group", "describe", "-b", addr, "g", "nope"}, "group nope", "GROUP_ID_NOT_FOUND")
	if !strings.Contains(r.out, "Group: g\n") {
		t.Errorf("describe g nope: %q", r.out)
	}

	out = mustGroup(t, "group", "delete", "-b", addr, "g")
	if out != "deleted group g\n" {
		t.Errorf("delete output %q", out)
	}
	if out := mustGroup(t, "group", "list", "-b", addr); hasRow(out, "g", "Empty", "consumer", "0") {
		t.Errorf("list after delete:\n%s", out)
	}
	r = wantGroupErr(t, []string{"group", "delete", "-b", addr, "g"}, "1 of 1 groups failed")
	if !strings.Contains(r.out, "g: error: GROUP_ID_NOT_FOUND") {
		t.Errorf("delete of a missing group: %q", r.out)
	}
	wantGroupErr(t, []string{"group", "describe", "-b", addr, "g"}, "group g", "GROUP_ID_NOT_FOUND")
}

func TestGroupSeek(t *testing.T) {
	addr := newFakeCluster(t, 2, "orders")
	adm := newAdmin(t, addr)

	// Records with known timestamps: p0 at 1000..5000 ms, p1 at 1000, 2000.
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var recs []*kgo.Record
	for p, n := range []int{5, 2} {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(p), Value: []byte("v"), Timestamp: time.UnixMilli(int64(1000 * (i + 1)))})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A consumer commits, then leaves: the group is Empty.
	cons := joinGroup(t, addr, "g", "cons", "", "orders")
	waitGroup(t, adm, "g", "Stable", 1, 2)
	commitInGroup(t, cons, "orders", map[int32]int64{0: 4, 1: 1})
	cons.Close()
	waitGroup(t, adm, "g", "Empty", 0, 0)

	seek := func(args ...string) string {
		t.Helper()
		return mustGroup(t, append([]string{"group", "seek", "-b", addr, "g", "--topic", "orders"}, args...)...)
	}
	wantRows := func(out string, rows ...[]string) {
		t.Helper()
		for _, r := range append([][]string{{"TOPIC", "PARTITION", "OLD", "NEW"}}, rows...) {
			if !hasRow(out, r...) {
				t.Errorf("seek output lacks row %q:\n%s", r, out)
			}
		}
	}

	out := seek("--to-earliest")
	wantRows(out, []string{"orders", "0", "4", "0"}, []string{"orders", "1", "1", "0"})
	if !strings.Contains(out, "committed new offsets for 2 partitions of orders for group g\n") {
		t.Errorf("seek footer:\n%s", out)
	}
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 0, 1: 0})

	out = seek("--to-latest", "--partitions", "0")
	wantRows(out, []string{"orders", "0", "0", "5"})
	if strings.Contains(out, "orders  1") {
		t.Errorf("seek of partition 0 shows partition 1:\n%s", out)
	}
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 5, 1: 0})

	// First record at or after 2500 ms: offset 2 in p0; none in p1, so
	// its log end.
	out = seek("--to-timestamp", "2500")
	wantRows(out, []string{"orders", "0", "5", "2"}, []string{"orders", "1", "0", "2"})
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 2, 1: 2})

	out = seek("--to-offset", "3", "-p", "1,0")
	wantRows(out, []string{"orders", "0", "2", "3"}, []string{"orders", "1", "2", "2", "(clamped:", "the", "log", "ends", "at", "2)"})
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 3, 1: 2})

	// A dry run shows the plan and commits nothing.
	out = seek("--to-earliest", "--dry-run")
	wantRows(out, []string{"orders", "0", "3", "0"}, []string{"orders", "1", "2", "0"})
	if !strings.Contains(out, "dry run: nothing committed for group g\n") {
		t.Errorf("dry run footer:\n%s", out)
	}
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 3, 1: 2})

	// With the log start moved up, earliest and offsets below it follow.
	if _, err := adm.DeleteRecords(ctx, kadm.Offsets{"orders": {0: {Topic: "orders", Partition: 0, At: 2}}}); err != nil {
		t.Fatalf("deleting records: %v", err)
	}
	out = seek("--to-offset", "1", "--partitions", "0")
	wantRows(out, []string{"orders", "0", "3", "2", "(clamped:", "the", "log", "starts", "at", "2)"})
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 2, 1: 2})
	out = seek("--to-offset", "4", "--partitions", "0")
	wantRows(out, []string{"orders", "0", "2", "4"})
	out = seek("--to-earliest", "--partitions", "0")
	wantRows(out, []string{"orders", "0", "4", "2"})
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 2, 1: 2})

	// A group that does not exist yet is created by the commit, with a note.
	r := runGroupCLI(t, "group", "seek", "-b", addr, "fresh", "--topic", "orders", "--to-latest")
	if r.err != nil {
		t.Fatalf("seek of a new group: %v", r.err)
	}
	wantRows(r.out, []string{"orders", "0", "-", "5"}, []string{"orders", "1", "-", "2"})
	if !strings.Contains(r.errOut, "group fresh does not exist; committing offsets creates it") {
		t.Errorf("seek of a new group: stderr %q", r.errOut)
	}
	wantCommitted(t, adm, "fresh", "orders", map[int32]int64{0: 5, 1: 2})

	// Topics and partitions that are not there.
	wantGroupErr(t, []string{"group", "seek", "-b", addr, "g", "--topic", "orders", "--to-earliest", "--partitions", "0,7"},
		"topic orders has no partition 7 (it has 2)")
	wantGroupErr(t, []string{"group", "seek", "-b", addr, "g", "--topic", "nope", "--to-earliest"},
		"topic nope", "UNKNOWN_TOPIC_OR_PARTITION")
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 2, 1: 2})
}

func TestGroupSeekRefusedWhileMembers(t *testing.T) {
	addr := newFakeCluster(t, 1, "orders")
	produceLines(t, addr, "orders", 0, "a", "b")
	adm := newAdmin(t, addr)
	cons := joinGroup(t, addr, "g", "cons", "", "orders")
	waitGroup(t, adm, "g", "Stable", 1, 1)
	commitInGroup(t, cons, "orders", map[int32]int64{0: 1})

	for _, mode := range [][]string{{"--to-earliest"}, {"--to-latest"}, {"--to-timestamp", "0"}, {"--to-offset", "0"}, {"--to-earliest", "--dry-run"}} {
		args := append([]string{"group", "seek", "-b", addr, "g", "--topic", "orders"}, mode...)
		r := wantGroupErr(t, args, "group g is Stable with 1 member(s)", "stop its consumers first")
		if r.out != "" {
			t.Errorf("seek %v refused but printed %q", mode, r.out)
		}
	}
	wantCommitted(t, adm, "g", "orders", map[int32]int64{0: 1})
}

func TestGroupSeekCommitRejected(t *testing.T) {
	// A consumer that joins between the state check and the commit makes
	// the coordinator reject the commit; say what happened.
	c, addr := startFakeCluster(t, 2, "orders")
	c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		req := kr.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				if rp.Partition == 1 {
					sp.ErrorCode = kerr.UnknownMemberID.Code
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	r := wantGroupErr(t, []string{"group", "seek", "-b", addr, "g", "--topic", "orders", "--to-latest"},
		"1 of 2 partitions failed", "the group gained members after it was checked")
	if !hasRow(r.out, "orders", "0", "-", "0") || !strings.Contains(r.out, "error: UNKNOWN_MEMBER_ID") {
		t.Errorf("seek output:\n%s", r.out)
	}
}

func TestGroupBadInput(t *testing.T) {
	// None of these reach a broker: they fail while checking arguments.
	const addr = "127.0.0.1:1"
	seek := []string{"group", "seek", "-b", addr, "g"}
	with := func(base []string, more ...string) []string { return append(slices.Clone(base), more...) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{with(seek, "--to-earliest"), `required flag(s) "topic" not set`},
		{with(seek, "--topic", "", "--to-earliest"), "--topic must not be empty"},
		{with(seek, "--topic", "t"), "say where to move the offsets: give one of --to-earliest, --to-latest, --to-timestamp MS or --to-offset N"},
		{with(seek, "--topic", "t", "--to-earliest", "--to-latest"), "--to-earliest and --to-latest cannot be combined"},
		{with(seek, "--topic", "t", "--to-offset", "3", "--to-timestamp", "5"), "--to-timestamp and --to-offset cannot be combined"},
		{with(seek, "--topic", "t", "--to-earliest", "--to-latest", "--to-offset", "0"), "--to-earliest and --to-latest and --to-offset cannot be combined"},
		{with(seek, "--topic", "t", "--to-earliest", "--partitions", "0,x"), `invalid --partitions "0,x": "x" is not a partition number`},
		{with(seek, "--topic", "t", "--to-earliest", "--partitions", "0,,1"), `"" is not a partition number`},
		{with(seek, "--topic", "t", "--to-earliest", "--partitions=-1"), `"-1" is not a partition number`},
		{with(seek, "--topic", "t", "--to-earliest", "-p", "1,2,1"), "partition 1 given more than once"},
		{with(seek, "--topic", "t", "--to-offset=-1"), "invalid --to-offset -1: must not be negative"},
		{with(seek, "--topic", "t", "--to-timestamp=-5"), "invalid --to-timestamp -5"},
		{with(seek, "--topic", "t", "--to-timestamp", "yesterday"), `invalid argument "yesterday"`},
		{with(seek, "--topic", "t", "--to-start"), "unknown flag: --to-start"},
		{with(seek, "extra", "--topic", "t", "--to-earliest"), "accepts 1 arg(s), received 2"},
		{[]string{"group", "seek", "-b", addr, "--topic", "t", "--to-earliest"}, "accepts 1 arg(s), received 0"},
		{[]string{"group", "seek", "-b", addr, "", "--topic", "t", "--to-earliest"}, "group name must not be empty"},
		{[]string{"group", "list", "-b", addr, "--bogus"}, "unknown flag: --bogus"},
		{[]string{"group", "list", "-b", addr, "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"group", "list", "-b", " , "}, "no brokers given"},
		{[]string{"group", "describe", "-b", addr}, "requires at least 1 arg"},
		{[]string{"group", "describe", "-b", addr, "g", "g"}, `group "g" given more than once`},
		{[]string{"group", "delete", "-b", addr}, "requires at least 1 arg"},
		{[]string{"group", "delete", "-b", addr, "a", ""}, "group name must not be empty"},
		{[]string{"group", "frobnicate"}, `unknown command "frobnicate"`},
	} {
		wantGroupErr(t, tc.args, tc.want)
	}
}

func TestGroupUnreachableBroker(t *testing.T) {
	wantGroupErr(t, []string{"group", "list", "-b", "127.0.0.1:1", "--timeout", "300ms"}, "listing groups", "127.0.0.1:1")
}

func TestGroupBrokerWithoutGroupAPIs(t *testing.T) {
	// A broker that serves topics but no group APIs, as Cairn did before
	// it had a group coordinator.
	vs := kversion.Stable()
	for _, k := range []kmsg.Key{kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.Heartbeat,
		kmsg.LeaveGroup, kmsg.SyncGroup, kmsg.DescribeGroups, kmsg.ListGroups, kmsg.DeleteGroups, kmsg.OffsetDelete,
		kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe} {
		vs.SetMaxKeyVersion(int16(k), -1)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(vs), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := strings.Join(c.ListenAddrs(), ",")

	wantGroupErr(t, []string{"group", "list", "-b", addr}, "listing groups: the brokers do not support consumer groups", "FindCoordinator", "ListGroups")
	wantGroupErr(t, []string{"group", "describe", "-b", addr, "g"}, "describing groups: the brokers do not support consumer groups", "DescribeGroups")
	wantGroupErr(t, []string{"group", "delete", "-b", addr, "g"}, "deleting groups: the brokers do not support consumer groups", "DeleteGroups")
	wantGroupErr(t, []string{"group", "seek", "-b", addr, "g", "--topic", "orders", "--to-earliest"},
		"describing group g: the brokers do not support consumer groups")
}

func TestParsePartitionList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int32
	}{
		{"", nil},
		{"  ", nil},
		{"0", []int32{0}},
		{"2, 0 ,1", []int32{0, 1, 2}},
	} {
		got, err := parsePartitionList(tc.in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parsePartitionList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"a", "1,", "1.5", "-2", "1,1", "99999999999"} {
		if _, err := parsePartitionList(in); err == nil {
			t.Errorf("parsePartitionList(%q): want an error", in)
		}
	}
}
