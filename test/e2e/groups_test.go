package e2e

// Consumer groups end to end (issue 3): real cairn processes, real group members (kcat -G
// and confluent-kafka-python / kafka-python subprocesses, franz-go and sarama in process),
// hand-built group requests for the refusals, and the `cairn group` CLI.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/test/harness"
)

// Group timing used by every member in these tests. 6000 ms is the broker's default
// group.min.session.timeout.ms, the shortest session a member may ask for.
const (
	groupSession   = 6 * time.Second
	groupHeartbeat = 500 * time.Millisecond
	groupRebalance = 10 * time.Second
)

// groupBroker starts a broker whose empty groups complete their first rebalance at once
// (group.initial.rebalance.delay.ms=0, set at run time on the cluster resource), so that
// each new group does not wait the 3 s default for more members.
func groupBroker(t *testing.T) *Broker {
	t.Helper()
	b := startBroker(t, BrokerOpts{})
	setCluster(t, b.Admin(t), "group.initial.rebalance.delay.ms", "0")
	return b
}

// tpo is one partition offset of the topic under test.
type tpo struct {
	p int32
	o int64
}

// received collects what group members consumed: which member got which partition offset,
// with the value it read there.
type received struct {
	mu  sync.Mutex
	who map[tpo][]string
	val map[tpo]string
}

func newReceived() *received {
	return &received{who: map[tpo][]string{}, val: map[tpo]string{}}
}

func (r *received) add(member string, p int32, o int64, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := tpo{p, o}
	r.who[k] = append(r.who[k], member)
	r.val[k] = value
}

// value is the value received at k ("" when nothing was).
func (r *received) value(k tpo) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.val[k]
}

// distinct is the number of distinct partition offsets received.
func (r *received) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.who)
}

func (r *received) hasAll(acked []ackedRecord) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range acked {
		if _, ok := r.who[tpo{a.Partition, a.Offset}]; !ok {
			return false
		}
	}
	return true
}

// byMember returns, per member, the partition offsets it received.
func (r *received) byMember() map[string][]tpo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]tpo{}
	for k, ms := range r.who {
		for _, m := range ms {
			out[m] = append(out[m], k)
		}
	}
	return out
}

// checkExactlyOnce asserts that every acknowledged record was received exactly once (by any
// member) with its value, and that nothing else was received.
func (r *received) checkExactlyOnce(t *testing.T, acked []ackedRecord) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	want := map[tpo]string{}
	for _, a := range acked {
		want[tpo{a.Partition, a.Offset}] = a.Value
	}
	bad := 0
	report := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, k := range sortedTPOs(r.who) {
		ms := r.who[k]
		v, ok := want[k]
		switch {
		case !ok:
			report("partition %d offset %d (%q) received by %v but never produced in this test", k.p, k.o, r.val[k], ms)
		case len(ms) != 1:
			report("partition %d offset %d (%q) received %d times, by %v; want exactly once", k.p, k.o, v, len(ms), ms)
		case r.val[k] != v:
			report("partition %d offset %d: received %q, produced %q", k.p, k.o, r.val[k], v)
		}
	}
	for _, a := range acked {
		if _, ok := r.who[tpo{a.Partition, a.Offset}]; !ok {
			report("record %q at partition %d offset %d was never received", a.Value, a.Partition, a.Offset)
		}
	}
	if bad > 0 {
		t.Errorf("%d delivery problems among %d produced records (%d distinct received)", bad, len(acked), len(r.who))
	}
}

func sortedTPOs[V any](m map[tpo]V) []tpo {
	ks := make([]tpo, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].p != ks[j].p {
			return ks[i].p < ks[j].p
		}
		return ks[i].o < ks[j].o
	})
	return ks
}

// producer returns a client that produces uncompressed batches (Debian's kafka-python has
// no snappy, franz-go's default) to explicit partitions.
func producer(t *testing.T, b *Broker) *kgo.Client {
	return b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
}

// produceRoundRobin produces n records with values "<prefix>-i", record i to partition
// i % parts, and returns what was acknowledged.
func produceRoundRobin(t *testing.T, cl *kgo.Client, topic string, parts int32, prefix string, n int) []ackedRecord {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i) % parts,
			Key: []byte(fmt.Sprintf("%s-key-%d", prefix, i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	res := cl.ProduceSync(ctxFor(t, 60*time.Second), recs...)
	out := make([]ackedRecord, 0, n)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("producing record %d of %d to %s[%d]: %v", i, n, topic, r.Record.Partition, r.Err)
		}
		out = append(out, ackedRecord{r.Record.Partition, r.Record.Offset, string(r.Record.Key), string(r.Record.Value)})
	}
	return out
}

func allPartitions(parts int32) []int32 {
	out := make([]int32, parts)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// describeGroup describes one group, failing the test when the request fails.
func describeGroup(t *testing.T, adm *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	ds, err := adm.DescribeGroups(ctxFor(t, 15*time.Second), group)
	if err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, err)
	}
	d, ok := ds[group]
	if !ok {
		t.Fatalf("DescribeGroups %s: no answer for the group", group)
	}
	return d
}

// memberParts returns the partitions of topic assigned to a described member.
func memberParts(m kadm.DescribedGroupMember, topic string) []int32 {
	a, ok := m.Assigned.AsConsumer()
	if !ok {
		return nil
	}
	var out []int32
	for _, at := range a.Topics {
		if at.Topic == topic {
			out = append(out, at.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

func renderGroup(d kadm.DescribedGroup, topic string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "state %q protocol %q/%q err %v, %d members:", d.State, d.ProtocolType, d.Protocol, d.Err, len(d.Members))
	for _, m := range d.Members {
		fmt.Fprintf(&sb, " [%s client %s: %v]", m.MemberID, m.ClientID, memberParts(m, topic))
	}
	return sb.String()
}

// splitAssignment reports whether d is Stable with exactly the given client ids as
// members, each assigned at least one partition of topic and together every partition
// exactly once; it returns each client id's partitions.
func splitAssignment(d kadm.DescribedGroup, topic string, parts int32, clients ...string) (map[string][]int32, bool) {
	if d.Err != nil || d.State != "Stable" || len(d.Members) != len(clients) {
		return nil, false
	}
	out := map[string][]int32{}
	owner := map[int32]string{}
	for _, m := range d.Members {
		if !slices.Contains(clients, m.ClientID) || out[m.ClientID] != nil {
			return nil, false
		}
		ps := memberParts(m, topic)
		if len(ps) == 0 {
			return nil, false
		}
		for _, p := range ps {
			if _, dup := owner[p]; dup || p < 0 || p >= parts {
				return nil, false
			}
			owner[p] = m.ClientID
		}
		out[m.ClientID] = ps
	}
	return out, len(owner) == int(parts)
}

// waitSplit polls DescribeGroups until the group is split among exactly clients (see
// splitAssignment) and returns the assignment.
func waitSplit(t *testing.T, adm *kadm.Client, group, topic string, parts int32, timeout time.Duration, clients ...string) map[string][]int32 {
	t.Helper()
	var last kadm.DescribedGroup
	var split map[string][]int32
	if !eventually(timeout, func() bool {
		last = describeGroup(t, adm, group)
		var ok bool
		split, ok = splitAssignment(last, topic, parts, clients...)
		return ok
	}) {
		t.Fatalf("group %s: not Stable with members %v sharing the %d partitions of %s within %v; last: %s",
			group, clients, parts, topic, timeout, renderGroup(last, topic))
	}
	return split
}

// committedOffsets fetches the group's committed offsets for topic (OffsetFetch through
// kadm), retrying while the coordinator is loading.
func committedOffsets(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	var out map[int32]int64
	var lastErr error
	if !eventually(30*time.Second, func() bool {
		resps, err := adm.FetchOffsets(ctxFor(t, 15*time.Second), group)
		if err != nil {
			// Loading coordinators, and connections cut by a broker restart, are retried
			// until the deadline.
			lastErr = err
			return false
		}
		out = map[int32]int64{}
		for p, r := range resps[topic] {
			if r.Err != nil {
				lastErr = fmt.Errorf("partition %d: %w", p, r.Err)
				return true
			}
			if r.At >= 0 {
				out[p] = r.At
			}
		}
		lastErr = nil
		return true
	}) || lastErr != nil {
		t.Fatalf("OffsetFetch group %s: %v", group, lastErr)
	}
	return out
}

// nextOffsets is, per partition, one past the highest offset in tpos: what a member that
// consumed tpos in order and committed them has committed.
func nextOffsets(tpos []tpo) map[int32]int64 {
	out := map[int32]int64{}
	for _, k := range tpos {
		out[k.p] = max(out[k.p], k.o+1)
	}
	return out
}

func sameOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if bo, ok := b[p]; !ok || bo != o {
			return false
		}
	}
	return true
}

// checkResumed asserts that a member that resumed from committed received, per partition,
// exactly the acknowledged records at or after the committed offset (0 when none): nothing
// before it (re-read) and nothing missing (skipped).
func checkResumed(t *testing.T, got []tpo, committed map[int32]int64, acked []ackedRecord) {
	t.Helper()
	want := map[tpo]bool{}
	for _, a := range acked {
		if a.Offset >= committed[a.Partition] {
			want[tpo{a.Partition, a.Offset}] = true
		}
	}
	seen := map[tpo]int{}
	bad := 0
	report := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, k := range got {
		seen[k]++
		switch {
		case k.o < committed[k.p]:
			report("resumed member re-read partition %d offset %d, below the committed offset %d", k.p, k.o, committed[k.p])
		case !want[k]:
			report("resumed member received partition %d offset %d, which was not produced", k.p, k.o)
		case seen[k] == 2:
			report("resumed member received partition %d offset %d twice", k.p, k.o)
		}
	}
	for _, k := range sortedTPOs(want) {
		if seen[k] == 0 {
			report("resumed member skipped partition %d offset %d (committed offset %d)", k.p, k.o, committed[k.p])
		}
	}
	if bad > 0 {
		t.Errorf("resume from %v: %d problems (%d records received, %d expected)", committed, bad, len(got), len(want))
	}
}

// checkContiguousFrom asserts that a member that read part of a topic read, on each
// partition it got anything from, the offsets from[p], from[p]+1, ... without a gap or a
// repeat: it started at the committed position (0 when none) and skipped nothing.
func checkContiguousFrom(t *testing.T, who string, got []tpo, from map[int32]int64) {
	t.Helper()
	byPart := map[int32][]int64{}
	for _, k := range got {
		byPart[k.p] = append(byPart[k.p], k.o)
	}
	for p, offs := range byPart {
		slices.Sort(offs)
		for i, o := range offs {
			if o != from[p]+int64(i) {
				t.Errorf("%s read partition %d at offsets %v, want a run starting at the committed offset %d", who, p, head64(offs, 10), from[p])
				break
			}
		}
	}
}

func head64(s []int64, n int) []int64 {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// ---- kcat balanced consumers ----

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// kcatMember is one `kcat -G` balanced consumer subprocess.
type kcatMember struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stderr lockedBuffer
	bad    lockedBuffer // stdout lines that could not be parsed
}

// startKcatMember starts `kcat -G group topic` with client.id name, printing each record
// as "partition offset value"; every record lands in rec under name. The process is
// killed at the end of the test if it still runs.
func startKcatMember(t *testing.T, kcat string, b *Broker, group, topic, name string, rec *received, extra ...string) *kcatMember {
	t.Helper()
	args := append(slices.Clone(extra), "-b", b.KafkaAddr, "-G", group, "-u", "-f", `%p %o %s\n`,
		"-X", "client.id="+name,
		"-X", "auto.offset.reset=earliest",
		"-X", fmt.Sprintf("session.timeout.ms=%d", groupSession.Milliseconds()),
		"-X", fmt.Sprintf("heartbeat.interval.ms=%d", groupHeartbeat.Milliseconds()),
		"-X", fmt.Sprintf("max.poll.interval.ms=%d", groupRebalance.Milliseconds()),
		"-X", "fetch.wait.max.ms=200",
		topic)
	m := &kcatMember{t: t, name: name, done: make(chan struct{})}
	m.cmd = exec.Command(kcat, args...)
	m.cmd.Stderr = &m.stderr
	harness.DieWithParent(m.cmd)
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("starting kcat -G: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 3)
			if len(f) != 3 {
				fmt.Fprintln(&m.bad, sc.Text())
				continue
			}
			p, err1 := strconv.ParseInt(f[0], 10, 32)
			o, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil {
				fmt.Fprintln(&m.bad, sc.Text())
				continue
			}
			rec.add(name, int32(p), o, f[2])
		}
		m.err = m.cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		select {
		case <-m.done:
		default:
			m.cmd.Process.Kill()
			<-m.done
		}
		if t.Failed() {
			t.Logf("kcat %s stderr:\n%s", name, tailString(m.stderr.String(), 30))
		}
		if s := m.bad.String(); s != "" {
			t.Errorf("kcat %s printed lines that are not \"partition offset value\":\n%s", name, s)
		}
	})
	return m
}

// stop sends SIGTERM (kcat closes its consumer: commits and leaves the group) and waits.
func (m *kcatMember) stop() {
	m.t.Helper()
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		m.cmd.Process.Kill()
		<-m.done
		m.t.Fatalf("kcat %s did not exit within 20s of SIGTERM; stderr:\n%s", m.name, tailString(m.stderr.String(), 30))
	}
}

// kill9 kills the process with SIGKILL and waits until it is gone.
func (m *kcatMember) kill9() {
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// exitErr is the process's exit error once it exited ("still running" before).
func (m *kcatMember) exitErr() string {
	if !m.exited() {
		return "still running"
	}
	return fmt.Sprint(m.err)
}

func (m *kcatMember) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// TestGroupKcatSplit: two kcat balanced consumers (-G) in one group split a 4-partition
// topic: the group becomes Stable with each member owning some partitions and every
// partition owned once, and every record produced while they are stable is received
// exactly once, by the member that owns its partition. When one stops cleanly (commit and
// LeaveGroup) the other owns everything at once and reads on from the commits.
func TestGroupKcatSplit(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts, n = "kcat-split", "kcat-split-group", int32(4), 400
	createTopic(t, adm, topic, parts, nil)

	rec := newReceived()
	a := startKcatMember(t, kcat, b, group, topic, "kcat-a", rec)
	bm := startKcatMember(t, kcat, b, group, topic, "kcat-b", rec)
	split := waitSplit(t, adm, group, topic, parts, 30*time.Second, "kcat-a", "kcat-b")
	t.Logf("assignment: %v", split)

	prod := producer(t, b)
	acked := produceRoundRobin(t, prod, topic, parts, "split", n)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(acked) }) {
		t.Fatalf("the two kcat members received %d distinct of %d records within 30s", rec.distinct(), n)
	}
	// One more record per partition: a partition re-read by a member (a rebalance) would
	// deliver its old records again before this marker.
	markers1 := produceRoundRobin(t, prod, topic, parts, "marker", int(parts))
	if !eventually(20*time.Second, func() bool { return rec.hasAll(markers1) }) {
		t.Fatalf("markers not all received within 20s (%d distinct received)", rec.distinct())
	}
	if a.exited() || bm.exited() {
		t.Fatalf("a kcat member exited: a %s, b %s", a.exitErr(), bm.exitErr())
	}
	rec.checkExactlyOnce(t, slices.Concat(acked, markers1))

	owner := map[int32]string{}
	for c, ps := range split {
		for _, p := range ps {
			owner[p] = c
		}
	}
	consumedBy := map[int32]map[string]bool{}
	for m, ks := range rec.byMember() {
		for _, k := range ks {
			if consumedBy[k.p] == nil {
				consumedBy[k.p] = map[string]bool{}
			}
			consumedBy[k.p][m] = true
			if owner[k.p] != m {
				t.Errorf("%s received partition %d offset %d, but the group assigned partition %d to %s", m, k.p, k.o, k.p, owner[k.p])
			}
		}
	}
	for p := int32(0); p < parts; p++ {
		if len(consumedBy[p]) != 1 {
			t.Errorf("partition %d consumed by %v, want exactly one member", p, consumedBy[p])
		}
	}
	after, ok := splitAssignment(describeGroup(t, adm, group), topic, parts, "kcat-a", "kcat-b")
	if !ok || fmt.Sprint(after) != fmt.Sprint(split) {
		t.Errorf("after consuming, the assignment is %v (split %v), want the one consumed under: %v", after, ok, split)
	}

	// A clean stop (SIGTERM: kcat commits and sends LeaveGroup) hands kcat-b's partitions
	// to kcat-a at once, well before kcat-b's session would have expired; kcat-a then gets
	// every new record once.
	bm.stop()
	left := time.Now()
	waitSplit(t, adm, group, topic, parts, groupSession-2*time.Second, "kcat-a")
	t.Logf("kcat-a owned every partition %v after kcat-b left", time.Since(left))
	late := produceRoundRobin(t, prod, topic, parts, "after-leave", 80)
	if !eventually(20*time.Second, func() bool { return rec.hasAll(late) }) {
		t.Fatalf("kcat-a did not receive the records produced after kcat-b left within 20s")
	}
	markers := produceRoundRobin(t, prod, topic, parts, "marker2", int(parts))
	if !eventually(20*time.Second, func() bool { return rec.hasAll(markers) }) {
		t.Fatalf("second markers not all received within 20s")
	}
	for m, ks := range rec.byMember() {
		for _, k := range ks {
			if v := rec.value(k); strings.HasPrefix(v, "after-leave-") && m != "kcat-a" {
				t.Errorf("%s received %q after it left", m, v)
			}
		}
	}
	// kcat-b committed what it had read as it closed, and kcat-a committed before its
	// partitions were revoked in the rebalance: nothing is read twice.
	rec.checkExactlyOnce(t, slices.Concat(acked, markers1, late, markers))
}

// TestGroupKcatKill9Member: two kcat members share a topic; kill -9 of one moves all its
// partitions to the survivor within the session timeout (plus a margin for the survivor's
// heartbeat and rejoin), and the survivor then receives records produced to every
// partition, the dead member's included.
func TestGroupKcatKill9Member(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "kcat-kill", "kcat-kill-group", int32(4)
	createTopic(t, adm, topic, parts, nil)

	rec := newReceived()
	survivor := startKcatMember(t, kcat, b, group, topic, "kcat-survivor", rec)
	victim := startKcatMember(t, kcat, b, group, topic, "kcat-victim", rec)
	split := waitSplit(t, adm, group, topic, parts, 30*time.Second, "kcat-survivor", "kcat-victim")
	prod := producer(t, b)
	before := produceRoundRobin(t, prod, topic, parts, "before", 80)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(before) }) {
		t.Fatalf("members received %d distinct of %d records within 30s", rec.distinct(), len(before))
	}

	victim.kill9()
	killed := time.Now()
	// The victim's session expires groupSession after its last heartbeat; the survivor
	// learns of the rebalance at its next heartbeat and rejoins. Margin: 5 s.
	const margin = 5 * time.Second
	var last kadm.DescribedGroup
	if !eventually(groupSession+margin+10*time.Second, func() bool {
		last = describeGroup(t, adm, group)
		_, ok := splitAssignment(last, topic, parts, "kcat-survivor")
		return ok
	}) {
		t.Fatalf("after kill -9 of the member owning %v, the survivor did not own all %d partitions within %v; last: %s",
			split["kcat-victim"], parts, groupSession+margin+10*time.Second, renderGroup(last, topic))
	}
	took := time.Since(killed)
	t.Logf("survivor owned every partition %v after the kill -9", took)
	if took > groupSession+margin {
		t.Errorf("the survivor took %v to own the dead member's partitions, want at most the session timeout %v + %v", took, groupSession, margin)
	}

	after := produceRoundRobin(t, prod, topic, parts, "after", 40)
	if !eventually(20*time.Second, func() bool { return rec.hasAll(after) }) {
		t.Fatalf("the survivor received %d distinct records; not all %d produced after the kill within 20s", rec.distinct(), len(after))
	}
	got := map[int32]bool{}
	for m, ks := range rec.byMember() {
		for _, k := range ks {
			if k.o >= before[len(before)-1].Offset && m == "kcat-survivor" {
				got[k.p] = true
			}
		}
	}
	for _, p := range split["kcat-victim"] {
		if !got[p] {
			t.Errorf("the survivor received nothing from partition %d, which the killed member owned", p)
		}
	}
	for m, ks := range rec.byMember() {
		if m == "kcat-survivor" {
			continue
		}
		for _, k := range ks {
			if v := rec.value(k); strings.HasPrefix(v, "after-") {
				t.Errorf("%s (killed) received %q", m, v)
			}
		}
	}
	if survivor.exited() {
		t.Errorf("the surviving kcat exited: %s", survivor.exitErr())
	}
}

// TestGroupMembersRideBrokerRestart: two kcat members stay up while the broker is killed
// -9 and restarted (kcat -E: a broker that is down is not a reason to exit). The coordinator
// replays the group with both members, who carry on in their generation: same member ids,
// same assignment, and every record, before and after the crash, received exactly once.
func TestGroupMembersRideBrokerRestart(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "ride", "ride-group", int32(4)
	createTopic(t, adm, topic, parts, nil)
	rec := newReceived()
	a := startKcatMember(t, kcat, b, group, topic, "kcat-a", rec, "-E")
	bm := startKcatMember(t, kcat, b, group, topic, "kcat-b", rec, "-E")
	split := waitSplit(t, adm, group, topic, parts, 30*time.Second, "kcat-a", "kcat-b")
	ids := map[string]string{}
	for _, m := range describeGroup(t, adm, group).Members {
		ids[m.ClientID] = m.MemberID
	}
	before := produceRoundRobin(t, producer(t, b), topic, parts, "before", 200)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(before) }) {
		t.Fatalf("members received %d of %d records within 30s", rec.distinct(), len(before))
	}

	b.Kill9()
	b.Restart()
	if got := waitSplit(t, adm, group, topic, parts, 20*time.Second, "kcat-a", "kcat-b"); fmt.Sprint(got) != fmt.Sprint(split) {
		t.Errorf("after the restart the group is split %v, want the same as before: %v", got, split)
	}
	prod := producer(t, b)
	after := produceRoundRobin(t, prod, topic, parts, "after", 200)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(after) }) {
		t.Fatalf("after the restart the members received %d distinct records within 30s; not all of the %d new ones (kcat-a exited %v %v, kcat-b exited %v %v)",
			rec.distinct(), len(after), a.exited(), a.exitErr(), bm.exited(), bm.exitErr())
	}
	markers := produceRoundRobin(t, prod, topic, parts, "marker", int(parts))
	if !eventually(20*time.Second, func() bool { return rec.hasAll(markers) }) {
		t.Fatalf("markers not received within 20s")
	}
	d := describeGroup(t, adm, group)
	for _, m := range d.Members {
		if ids[m.ClientID] != m.MemberID {
			t.Errorf("%s is member %s after the restart, %s before: it had to join again", m.ClientID, m.MemberID, ids[m.ClientID])
		}
	}
	rec.checkExactlyOnce(t, append(append(slices.Clone(before), after...), markers...))
	if a.exited() || bm.exited() {
		t.Errorf("a kcat member exited: a %s, b %s", a.exitErr(), bm.exitErr())
	}
}

// ---- franz-go group members in process ----

// kgoMember is a franz-go group consumer: manual commits of each processed poll before the
// next (rebalances blocked while processing), and a log of its partition ownership.
type kgoMember struct {
	t      *testing.T
	name   string
	cl     *kgo.Client
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	cancel context.CancelFunc

	mu       sync.Mutex
	owned    map[int32]bool
	assigned [][]int32 // each OnPartitionsAssigned with partitions
	revoked  [][]int32 // each OnPartitionsRevoked / Lost with partitions
	errs     []string
	commits  int
}

// startKgoMember joins group as a franz-go consumer of topic. Each poll (at most pollMax
// records) is recorded in rec under name and committed synchronously before the next; the
// poll loop ends when stopWhen (if set) holds after a poll, or on stopPolling. The member
// stays in the group until close.
func startKgoMember(t *testing.T, b *Broker, group, topic, name string, rec *received, pollMax int, stopWhen func() bool, extra ...kgo.Opt) *kgoMember {
	t.Helper()
	m := &kgoMember{t: t, name: name, stop: make(chan struct{}), done: make(chan struct{}), owned: map[int32]bool{}}
	parts := func(ps map[string][]int32) []int32 {
		out := slices.Clone(ps[topic])
		slices.Sort(out)
		return out
	}
	lose := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if p := parts(ps); len(p) > 0 {
			m.revoked = append(m.revoked, p)
			for _, x := range p {
				delete(m.owned, x)
			}
		}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(b.KafkaAddr),
		kgo.ClientID(name),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(groupSession),
		kgo.HeartbeatInterval(groupHeartbeat),
		kgo.RebalanceTimeout(groupRebalance),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if p := parts(ps); len(p) > 0 {
				m.assigned = append(m.assigned, p)
				for _, x := range p {
					m.owned[x] = true
				}
			}
		}),
		kgo.OnPartitionsRevoked(lose),
		kgo.OnPartitionsLost(lose),
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	// The member's own context, not the test's: t.Context() is canceled before cleanups
	// run, which would fail a commit in flight while the test ends.
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			fs := cl.PollRecords(pctx, pollMax)
			pcancel()
			if fs.IsClientClosed() {
				return
			}
			fs.EachError(func(tp string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					m.errorf("fetch %s[%d]: %v", tp, p, err)
				}
			})
			recs := fs.Records()
			m.mu.Lock()
			for _, r := range recs {
				if !m.owned[r.Partition] {
					m.errs = append(m.errs, fmt.Sprintf("received partition %d offset %d while not owning the partition (owned %v)", r.Partition, r.Offset, m.owned))
				}
			}
			m.mu.Unlock()
			for _, r := range recs {
				rec.add(name, r.Partition, r.Offset, string(r.Value))
			}
			if len(recs) > 0 {
				cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
				err := cl.CommitRecords(cctx, recs...)
				ccancel()
				if err != nil {
					m.errorf("committing %d records: %v", len(recs), err)
				} else {
					m.mu.Lock()
					m.commits++
					m.mu.Unlock()
				}
			}
			cl.AllowRebalance()
			if stopWhen != nil && stopWhen() {
				return
			}
		}
	}()
	t.Cleanup(func() {
		m.close()
		for _, e := range m.errors() {
			t.Errorf("franz-go member %s: %s", name, e)
		}
	})
	return m
}

func (m *kgoMember) errorf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, fmt.Sprintf(format, args...))
}

func (m *kgoMember) errors() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.errs)
}

func (m *kgoMember) ownedParts() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// stopPolling ends the poll loop (the member stays in the group, heartbeating) and waits.
func (m *kgoMember) stopPolling() {
	m.t.Helper()
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		m.t.Fatalf("franz-go member %s: poll loop did not end within 30s", m.name)
	}
}

// close ends the poll loop and closes the client, which leaves the group.
func (m *kgoMember) close() {
	m.once.Do(func() {
		select {
		case <-m.stop:
		default:
			close(m.stop)
		}
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			m.t.Errorf("franz-go member %s: poll loop did not end within 30s", m.name)
		}
		m.cancel()
		m.cl.CloseAllowingRebalance()
	})
}

// TestGroupResumeFromCommit: a member consumes part of a topic, committing what it
// processed, and stops cleanly (leaves the group); more records arrive; a new member of
// the same group receives exactly the records from the committed offsets on.
func TestGroupResumeFromCommit(t *testing.T) {
	t.Parallel()
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "resume", "resume-group", int32(3)
	createTopic(t, adm, topic, parts, nil)
	prod := producer(t, b)
	first := produceRoundRobin(t, prod, topic, parts, "first", 300)

	rec1 := newReceived()
	m1 := startKgoMember(t, b, group, topic, "first-member", rec1, 20, func() bool { return rec1.distinct() >= 120 })
	select {
	case <-m1.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the first member received %d records within 30s, want 120", rec1.distinct())
	}
	m1.close()
	got1 := rec1.byMember()["first-member"]
	checkContiguousFrom(t, "the first member", got1, nil)
	want := nextOffsets(got1)
	committed := committedOffsets(t, adm, group, topic)
	if !sameOffsets(committed, want) {
		t.Fatalf("after the first member committed what it processed and left, OffsetFetch = %v, want %v", committed, want)
	}
	if d := describeGroup(t, adm, group); d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("after the member left: %s, want Empty with no members", renderGroup(d, topic))
	}

	second := produceRoundRobin(t, prod, topic, parts, "second", 90)
	all := append(slices.Clone(first), second...)
	rec2 := newReceived()
	wantCount := 0
	for _, a := range all {
		if a.Offset >= committed[a.Partition] {
			wantCount++
		}
	}
	startKgoMember(t, b, group, topic, "second-member", rec2, 50, nil)
	if !eventually(30*time.Second, func() bool { return rec2.distinct() >= wantCount }) {
		t.Fatalf("the resumed member received %d records within 30s, want %d", rec2.distinct(), wantCount)
	}
	// A marker per partition: any record re-read would arrive before it.
	markers := produceRoundRobin(t, prod, topic, parts, "marker", int(parts))
	if !eventually(20*time.Second, func() bool { return rec2.hasAll(markers) }) {
		t.Fatalf("the resumed member did not receive the markers within 20s")
	}
	checkResumed(t, rec2.byMember()["second-member"], committed, append(all, markers...))
}

// TestGroupOffsetsSurviveBrokerRestart: offsets a member committed (and the broker
// acknowledged) on every partition are what OffsetFetch reports after a clean restart and
// after a kill -9, and members resume exactly from them. Each stage's member reads one batch
// completely while the next batch is already in the log, so the commits lie inside it.
func TestGroupOffsetsSurviveBrokerRestart(t *testing.T) {
	t.Parallel()
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "restart-offsets", "restart-group", int32(3)
	createTopic(t, adm, topic, parts, nil)
	prod := producer(t, b)
	batchA := produceRoundRobin(t, prod, topic, parts, "a", 90)

	// Stage 1: a member reads batch A, commits, leaves; batch B follows; SIGTERM restart.
	rec1 := newReceived()
	m1 := startKgoMember(t, b, group, topic, "member-1", rec1, 1000, func() bool { return rec1.hasAll(batchA) })
	waitDone(t, m1, rec1, len(batchA))
	m1.close()
	want1 := nextOffsets(rec1.byMember()["member-1"])
	if !sameOffsets(want1, endOffsets(t, adm, topic)) {
		t.Fatalf("member-1 read up to %v, want all of batch A", want1)
	}
	batchB := produceRoundRobin(t, prod, topic, parts, "b", 90)
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, want1) {
		t.Fatalf("before the restart OffsetFetch = %v, want the processed positions %v", got, want1)
	}
	b.Restart()
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, want1) {
		t.Fatalf("after a clean restart OffsetFetch = %v, want %v", got, want1)
	}
	if d := describeGroup(t, adm, group); d.Err != nil || d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Errorf("after a clean restart the group is %s, want Empty with protocol type consumer", renderGroup(d, topic))
	}

	// Stage 2: a member resumes (exactly batch B), commits; batch C follows; the broker is
	// killed -9 right after the commit was acknowledged, with the member still in the group.
	rec2 := newReceived()
	m2 := startKgoMember(t, b, group, topic, "member-2", rec2, 1000, func() bool { return rec2.hasAll(batchB) })
	waitDone(t, m2, rec2, len(batchB))
	checkResumed(t, rec2.byMember()["member-2"], want1, append(slices.Clone(batchA), batchB...))
	want2 := nextOffsets(rec2.byMember()["member-2"])
	batchC := produceRoundRobin(t, prod, topic, parts, "c", 90)
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, want2) {
		t.Fatalf("before the kill -9 OffsetFetch = %v, want %v", got, want2)
	}
	b.Kill9()
	b.Restart()
	m2.close() // leaves the group on the restarted broker (or finds itself expelled)
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, want2) {
		t.Fatalf("after kill -9 and restart OffsetFetch = %v, want the acknowledged %v", got, want2)
	}

	// Stage 3: a new member resumes exactly there: batch C and nothing else.
	rec3 := newReceived()
	startKgoMember(t, b, group, topic, "member-3", rec3, 1000, nil)
	if !eventually(45*time.Second, func() bool { return rec3.hasAll(batchC) }) {
		t.Fatalf("after the restarts a new member received %d records within 45s, not all of batch C", rec3.distinct())
	}
	markers := produceRoundRobin(t, prod, topic, parts, "marker", int(parts))
	if !eventually(20*time.Second, func() bool { return rec3.hasAll(markers) }) {
		t.Fatalf("the member did not receive the markers within 20s")
	}
	all := append(append(append(slices.Clone(batchA), batchB...), batchC...), markers...)
	checkResumed(t, rec3.byMember()["member-3"], want2, all)
}

// waitDone waits until a member's poll loop ended (its stop condition held).
func waitDone(t *testing.T, m *kgoMember, rec *received, want int) {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(45 * time.Second):
		t.Fatalf("member %s received %d records within 45s, want %d; errors %q", m.name, rec.distinct(), want, m.errors())
	}
}

// TestGroupFranzCooperativeSticky: two franz-go members with the cooperative-sticky
// balancer join one after the other. The second join moves only some partitions: the
// first member keeps the rest throughout (never revoked), the second gets exactly what the
// first gave up, no partition has two owners; every record is consumed once and the final
// commits are the log end offsets.
func TestGroupFranzCooperativeSticky(t *testing.T) {
	t.Parallel()
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "coop", "coop-group", int32(6)
	createTopic(t, adm, topic, parts, nil)
	prod := producer(t, b)
	coop := kgo.Balancers(kgo.CooperativeStickyBalancer())

	rec := newReceived()
	a := startKgoMember(t, b, group, topic, "coop-a", rec, 50, nil, coop)
	waitSplit(t, adm, group, topic, parts, 30*time.Second, "coop-a")
	batch1 := produceRoundRobin(t, prod, topic, parts, "one", 300)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(batch1) }) {
		t.Fatalf("coop-a received %d of %d records within 30s", rec.distinct(), len(batch1))
	}

	bm := startKgoMember(t, b, group, topic, "coop-b", rec, 50, nil, coop)
	split := waitSplit(t, adm, group, topic, parts, 30*time.Second, "coop-a", "coop-b")
	if !eventually(15*time.Second, func() bool {
		return fmt.Sprint(a.ownedParts()) == fmt.Sprint(split["coop-a"]) && fmt.Sprint(bm.ownedParts()) == fmt.Sprint(split["coop-b"])
	}) {
		t.Fatalf("members' own view %v / %v differs from the group's assignment %v", a.ownedParts(), bm.ownedParts(), split)
	}
	d := describeGroup(t, adm, group)
	if d.Protocol != "cooperative-sticky" {
		t.Errorf("group protocol %q, want cooperative-sticky", d.Protocol)
	}

	batch2 := produceRoundRobin(t, prod, topic, parts, "two", 300)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(batch2) }) {
		t.Fatalf("members received %d distinct records; not all of the second batch within 30s", rec.distinct())
	}
	markers := produceRoundRobin(t, prod, topic, parts, "marker", int(parts))
	if !eventually(20*time.Second, func() bool { return rec.hasAll(markers) }) {
		t.Fatalf("markers not received within 20s")
	}
	all := append(append(slices.Clone(batch1), batch2...), markers...)
	rec.checkExactlyOnce(t, all)

	a.mu.Lock()
	aAssigned, aRevoked := slices.Clone(a.assigned), slices.Clone(a.revoked)
	a.mu.Unlock()
	bm.mu.Lock()
	bAssigned, bRevoked := slices.Clone(bm.assigned), slices.Clone(bm.revoked)
	bm.mu.Unlock()
	t.Logf("coop-a assigned %v revoked %v; coop-b assigned %v revoked %v", aAssigned, aRevoked, bAssigned, bRevoked)
	if len(aAssigned) != 1 || fmt.Sprint(aAssigned[0]) != fmt.Sprint(allPartitions(parts)) {
		t.Errorf("coop-a was assigned %v, want all %d partitions once, then nothing new", aAssigned, parts)
	}
	var gaveUp []int32
	for _, r := range aRevoked {
		gaveUp = append(gaveUp, r...)
	}
	slices.Sort(gaveUp)
	for _, p := range split["coop-a"] {
		if slices.Contains(gaveUp, p) {
			t.Errorf("coop-a kept partition %d but had it revoked on the way (revocations %v): not incremental", p, aRevoked)
		}
	}
	if fmt.Sprint(gaveUp) != fmt.Sprint(split["coop-b"]) {
		t.Errorf("coop-a gave up %v, but coop-b was assigned %v", gaveUp, split["coop-b"])
	}
	if len(bRevoked) != 0 {
		t.Errorf("coop-b had partitions revoked: %v", bRevoked)
	}
	// Per-partition ownership: each partition's records after the move come from one member.
	for m, ks := range rec.byMember() {
		for _, k := range ks {
			if strings.HasPrefix(rec.value(k), "two-") && !slices.Contains(split[m], k.p) {
				t.Errorf("%s received %q from partition %d, which is assigned to the other member", m, rec.value(k), k.p)
			}
		}
	}

	ends := endOffsets(t, adm, topic)
	if !eventually(15*time.Second, func() bool { return sameOffsets(committedOffsets(t, adm, group, topic), ends) }) {
		t.Errorf("committed offsets %v, want the log end offsets %v", committedOffsets(t, adm, group, topic), ends)
	}
}

// TestGroupStaticMemberRestart: static membership (group.instance.id, JoinGroup v5+). Two
// franz-go members with instance ids and the eager range balancer split a topic; one is
// closed (a static member does not leave) and a new client with the same instance id joins
// within the session timeout: it takes the old member's place and partitions without a
// rebalance (the other member is never revoked, which an eager rebalance would do), and
// it resumes from the old member's commits, so every record is consumed once.
func TestGroupStaticMemberRestart(t *testing.T) {
	t.Parallel()
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "static", "static-group", int32(4)
	createTopic(t, adm, topic, parts, nil)
	prod := producer(t, b)
	rangeBalancer := kgo.Balancers(kgo.RangeBalancer())

	rec := newReceived()
	a := startKgoMember(t, b, group, topic, "static-a", rec, 50, nil, rangeBalancer, kgo.InstanceID("instance-a"))
	waitSplit(t, adm, group, topic, parts, 20*time.Second, "static-a")
	old := startKgoMember(t, b, group, topic, "static-b", rec, 50, nil, rangeBalancer, kgo.InstanceID("instance-b"))
	split := waitSplit(t, adm, group, topic, parts, 30*time.Second, "static-a", "static-b")
	if !eventually(15*time.Second, func() bool { return fmt.Sprint(old.ownedParts()) == fmt.Sprint(split["static-b"]) }) {
		t.Fatalf("static-b owns %v, the group assigned it %v", old.ownedParts(), split["static-b"])
	}
	oldID := ""
	for _, m := range describeGroup(t, adm, group).Members {
		if m.InstanceID == nil || (*m.InstanceID != "instance-a" && *m.InstanceID != "instance-b") {
			t.Errorf("member %s has instance id %v, want instance-a or instance-b", m.MemberID, m.InstanceID)
		} else if *m.InstanceID == "instance-b" {
			oldID = m.MemberID
		}
	}
	first := produceRoundRobin(t, prod, topic, parts, "first", 200)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(first) }) {
		t.Fatalf("members received %d of %d records within 30s", rec.distinct(), len(first))
	}
	a.mu.Lock()
	aRevokes := len(a.revoked)
	a.mu.Unlock()

	old.close() // no LeaveGroup: static members stay until their session expires
	if d := describeGroup(t, adm, group); len(d.Members) != 2 {
		t.Errorf("after the static member's client closed: %s, want both members still in the group", renderGroup(d, topic))
	}
	restarted := startKgoMember(t, b, group, topic, "static-b-restarted", rec, 50, nil, rangeBalancer, kgo.InstanceID("instance-b"))
	if !eventually(groupSession-time.Second, func() bool {
		return fmt.Sprint(restarted.ownedParts()) == fmt.Sprint(split["static-b"])
	}) {
		t.Fatalf("the restarted static member owns %v within %v, want the old one's %v", restarted.ownedParts(), groupSession-time.Second, split["static-b"])
	}
	d := describeGroup(t, adm, group)
	after, ok := splitAssignment(d, topic, parts, "static-a", "static-b-restarted")
	if !ok || fmt.Sprint(after["static-a"]) != fmt.Sprint(split["static-a"]) || fmt.Sprint(after["static-b-restarted"]) != fmt.Sprint(split["static-b"]) {
		t.Errorf("after the static restart: %s, want the same split %v", renderGroup(d, topic), split)
	}
	for _, m := range d.Members {
		if m.InstanceID != nil && *m.InstanceID == "instance-b" && m.MemberID == oldID {
			t.Errorf("instance-b still has its old member id %s after the restart", oldID)
		}
	}

	second := produceRoundRobin(t, prod, topic, parts, "second", 200)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(second) }) {
		t.Fatalf("members received %d distinct records; not all of the second batch within 30s", rec.distinct())
	}
	markers := produceRoundRobin(t, prod, topic, parts, "marker", int(parts))
	if !eventually(20*time.Second, func() bool { return rec.hasAll(markers) }) {
		t.Fatalf("markers not received within 20s")
	}
	rec.checkExactlyOnce(t, append(append(slices.Clone(first), second...), markers...))
	a.mu.Lock()
	if len(a.revoked) != aRevokes {
		t.Errorf("static-a had partitions revoked when static-b restarted (%v): the replacement rebalanced the group", a.revoked[aRevokes:])
	}
	a.mu.Unlock()
}

// kcatRevoked returns the partitions kcat reported as revoked in incremental (cooperative)
// rebalances, from its stderr lines "... incremental revoke of N partition(s) (...): t [0], t [1]".
func kcatRevoked(stderr, topic string) []int32 {
	var out []int32
	for _, l := range strings.Split(stderr, "\n") {
		_, rest, ok := strings.Cut(l, "incremental revoke of ")
		if !ok {
			continue
		}
		_, list, _ := strings.Cut(rest, "): ")
		for _, item := range strings.Split(list, ",") {
			item = strings.TrimSpace(item)
			if n, ok := strings.CutPrefix(item, topic+" ["); ok {
				if p, err := strconv.Atoi(strings.TrimSuffix(n, "]")); err == nil {
					out = append(out, int32(p))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestGroupKcatCooperativeSticky: librdkafka's cooperative-sticky assignor through kcat:
// the second member's join revokes from the first only the partitions that move (the
// broker carries the protocol; the members do the incremental dance in two rebalances),
// every record is read once, and when the second leaves the first takes everything back.
func TestGroupKcatCooperativeSticky(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "kcat-coop", "kcat-coop-group", int32(6)
	createTopic(t, adm, topic, parts, nil)
	rec := newReceived()
	coop := []string{"-X", "partition.assignment.strategy=cooperative-sticky"}
	a := startKcatMember(t, kcat, b, group, topic, "kcat-a", rec, coop...)
	waitSplit(t, adm, group, topic, parts, 30*time.Second, "kcat-a")
	prod := producer(t, b)
	one := produceRoundRobin(t, prod, topic, parts, "one", 300)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(one) }) {
		t.Fatalf("kcat-a received %d of %d records within 30s", rec.distinct(), len(one))
	}

	bm := startKcatMember(t, kcat, b, group, topic, "kcat-b", rec, coop...)
	split := waitSplit(t, adm, group, topic, parts, 30*time.Second, "kcat-a", "kcat-b")
	if d := describeGroup(t, adm, group); d.Protocol != "cooperative-sticky" {
		t.Errorf("group protocol %q, want cooperative-sticky", d.Protocol)
	}
	two := produceRoundRobin(t, prod, topic, parts, "two", 300)
	markers := produceRoundRobin(t, prod, topic, parts, "marker", int(parts))
	if !eventually(30*time.Second, func() bool { return rec.hasAll(two) && rec.hasAll(markers) }) {
		t.Fatalf("members received %d distinct records; not all of the second batch within 30s", rec.distinct())
	}
	rec.checkExactlyOnce(t, slices.Concat(one, two, markers))
	if got := kcatRevoked(a.stderr.String(), topic); fmt.Sprint(got) != fmt.Sprint(split["kcat-b"]) {
		t.Errorf("kcat-a had %v revoked incrementally, want exactly what kcat-b got, %v (kcat-a kept %v)\n%s",
			got, split["kcat-b"], split["kcat-a"], tailString(a.stderr.String(), 20))
	}
	for m, ks := range rec.byMember() {
		for _, k := range ks {
			if strings.HasPrefix(rec.value(k), "two-") && !slices.Contains(split[m], k.p) {
				t.Errorf("%s received %q from partition %d, which is assigned to the other member", m, rec.value(k), k.p)
			}
		}
	}

	bm.stop()
	waitSplit(t, adm, group, topic, parts, groupSession-2*time.Second, "kcat-a")
	three := produceRoundRobin(t, prod, topic, parts, "three", 120)
	if !eventually(30*time.Second, func() bool { return rec.hasAll(three) }) {
		t.Fatalf("kcat-a did not receive the records produced after kcat-b left within 30s")
	}
	rec.checkExactlyOnce(t, slices.Concat(one, two, markers, three))
}

// ---- Python clients ----

type pyGroupResult struct {
	Records   []pyRecord       `json:"records"`
	Assigned  []int32          `json:"assigned"`
	Committed map[string]int64 `json:"committed"`
	Errors    []string         `json:"errors"`
}

func (r pyGroupResult) tpos() []tpo {
	out := make([]tpo, len(r.Records))
	for i, x := range r.Records {
		out[i] = tpo{x.Partition, x.Offset}
	}
	return out
}

func (r pyGroupResult) committed(t *testing.T) map[int32]int64 {
	out := map[int32]int64{}
	for p, o := range r.Committed {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			t.Fatalf("helper reported a commit for partition %q", p)
		}
		out[int32(n)] = o
	}
	return out
}

// pythonGroupResume runs a Python group member helper twice in one group: the first run
// reads part of a topic and commits what it read; the second, after more records were
// produced, must read exactly the rest.
func pythonGroupResume(t *testing.T, module, script, label string) {
	requirePython(t, module)
	b := groupBroker(t)
	adm := b.Admin(t)
	topic, group := label+"-group-topic", label+"-group"
	const parts = int32(3)
	createTopic(t, adm, topic, parts, nil)
	prod := producer(t, b)
	first := produceRoundRobin(t, prod, topic, parts, "first", 150)

	var r1 pyGroupResult
	res := runPython(t, 90*time.Second, &r1, script, b.KafkaAddr, topic, group, "60", "count", "45")
	if res.Err != nil || len(r1.Errors) > 0 {
		t.Fatalf("%s first member: %s\nresult errors: %q", label, res, r1.Errors)
	}
	if len(r1.Records) != 60 {
		t.Fatalf("%s first member read %d records, want 60", label, len(r1.Records))
	}
	if fmt.Sprint(r1.Assigned) != fmt.Sprint(allPartitions(parts)) {
		t.Errorf("%s first member (alone in the group) was assigned %v, want every partition", label, r1.Assigned)
	}
	rec1 := newReceived()
	for _, x := range r1.Records {
		rec1.add(label, x.Partition, x.Offset, x.Value)
	}
	want := nextOffsets(r1.tpos())
	// A client may also commit its position on a partition it read nothing from: the log
	// start (0), where auto.offset.reset put it.
	for _, p := range allPartitions(parts) {
		if _, ok := want[p]; !ok {
			if o, ok := r1.committed(t)[p]; ok && o == 0 {
				want[p] = 0
			}
		}
	}
	if got := r1.committed(t); !sameOffsets(got, want) {
		t.Errorf("%s first member: its committed() reports %v, want the positions it read to %v", label, got, want)
	}
	committed := committedOffsets(t, adm, group, topic)
	if !sameOffsets(committed, want) {
		t.Fatalf("%s first member read up to %v, but OffsetFetch reports %v", label, want, committed)
	}
	if d := describeGroup(t, adm, group); d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("%s: after the first member closed: %s, want Empty", label, renderGroup(d, topic))
	}

	second := produceRoundRobin(t, prod, topic, parts, "second", 45)
	all := append(slices.Clone(first), second...)
	rest := 0
	for _, a := range all {
		if a.Offset >= committed[a.Partition] {
			rest++
		}
	}
	var r2 pyGroupResult
	res = runPython(t, 90*time.Second, &r2, script, b.KafkaAddr, topic, group, strconv.Itoa(rest), "end", "45")
	if res.Err != nil || len(r2.Errors) > 0 {
		t.Errorf("%s resumed member: %s\nresult errors: %q", label, res, r2.Errors)
	}
	checkResumed(t, r2.tpos(), committed, all)
	for _, x := range r2.Records {
		if v := (tpo{x.Partition, x.Offset}); rec1.value(v) != "" {
			t.Errorf("%s resumed member re-read %q at partition %d offset %d", label, x.Value, x.Partition, x.Offset)
		}
	}
	ends := endOffsets(t, adm, topic)
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, ends) {
		t.Errorf("%s: after the resumed member committed, OffsetFetch = %v, want the log end offsets %v", label, got, ends)
	}
}

// TestGroupConfluentKafkaPython: a confluent-kafka-python Consumer subscribes in a group,
// consumes, commits and closes; a second one in the same group resumes from the commit.
func TestGroupConfluentKafkaPython(t *testing.T) {
	t.Parallel()
	pythonGroupResume(t, "confluent_kafka", "group_consumer_confluent.py", "confluent")
}

// TestGroupKafkaPython: the same with kafka-python 2.0.2's KafkaConsumer (which probes old
// API versions).
func TestGroupKafkaPython(t *testing.T) {
	t.Parallel()
	pythonGroupResume(t, "kafka", "group_consumer_kafka_python.py", "kafka-python")
}

// ---- sarama ----

// saramaHandler records and marks every message; it cancels its session once the shared
// count reaches stopAt (0: never).
type saramaHandler struct {
	name   string
	topic  string
	rec    *received
	stopAt int
	cancel context.CancelFunc

	mu     sync.Mutex
	claims [][]int32
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := slices.Clone(s.Claims()[h.topic])
	slices.Sort(ps)
	h.claims = append(h.claims, ps)
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.rec.add(h.name, msg.Partition, msg.Offset, string(msg.Value))
			sess.MarkMessage(msg, "")
			if h.stopAt > 0 && h.rec.distinct() >= h.stopAt {
				h.cancel()
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

// runSaramaMember runs a sarama consumer group member until stopAt records were received
// (or, with stopAt 0, until done says so) and then closes it (it commits its marks and
// leaves).
func runSaramaMember(t *testing.T, b *Broker, group, topic, name string, rec *received, stopAt int, done func() bool) *saramaHandler {
	t.Helper()
	cfg := saramaConfig()
	cfg.ClientID = name
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = groupSession
	cfg.Consumer.Group.Heartbeat.Interval = groupHeartbeat
	cfg.Consumer.Group.Rebalance.Timeout = groupRebalance
	cg, err := sarama.NewConsumerGroup([]string{b.KafkaAddr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumerGroup: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			cg.Close()
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	h := &saramaHandler{name: name, topic: topic, rec: rec, stopAt: stopAt, cancel: cancel}
	var errsMu sync.Mutex
	var errs []string
	go func() {
		for err := range cg.Errors() {
			errsMu.Lock()
			errs = append(errs, err.Error())
			errsMu.Unlock()
		}
	}()
	consumed := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				consumed <- err
				return
			}
		}
		consumed <- nil
	}()
	if done != nil {
		go func() {
			for ctx.Err() == nil && !done() {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
		}()
	}
	if err := <-consumed; err != nil {
		t.Errorf("sarama %s: Consume: %v", name, err)
	}
	if deadline, _ := ctx.Deadline(); time.Now().After(deadline) {
		t.Errorf("sarama %s: stopped by the 60s limit with %d records received", name, rec.distinct())
	}
	if err := cg.Close(); err != nil {
		t.Errorf("sarama %s: Close: %v", name, err)
	}
	closed = true
	errsMu.Lock()
	for _, e := range errs {
		t.Errorf("sarama %s: %s", name, e)
	}
	errsMu.Unlock()
	return h
}

// TestGroupSarama: a sarama consumer group (ConsumerGroupHandler marking every message)
// consumes part of a topic, commits its marks as it closes, and a new one resumes exactly
// from there.
func TestGroupSarama(t *testing.T) {
	t.Parallel()
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "sarama-group-topic", "sarama-group", int32(4)
	createTopic(t, adm, topic, parts, nil)
	prod := producer(t, b)
	first := produceRoundRobin(t, prod, topic, parts, "first", 200)

	rec1 := newReceived()
	h1 := runSaramaMember(t, b, group, topic, "sarama-1", rec1, 80, nil)
	if fmt.Sprint(h1.claims) != fmt.Sprint([][]int32{allPartitions(parts)}) {
		t.Errorf("sarama-1 (alone) had claims %v, want one session with every partition", h1.claims)
	}
	want := nextOffsets(rec1.byMember()["sarama-1"])
	committed := committedOffsets(t, adm, group, topic)
	if !sameOffsets(committed, want) {
		t.Fatalf("sarama-1 marked up to %v, but OffsetFetch reports %v", want, committed)
	}

	second := produceRoundRobin(t, prod, topic, parts, "second", 40)
	all := append(slices.Clone(first), second...)
	rest := 0
	for _, a := range all {
		if a.Offset >= committed[a.Partition] {
			rest++
		}
	}
	rec2 := newReceived()
	runSaramaMember(t, b, group, topic, "sarama-2", rec2, rest, nil)
	checkResumed(t, rec2.byMember()["sarama-2"], committed, all)
	ends := endOffsets(t, adm, topic)
	if !eventually(10*time.Second, func() bool { return sameOffsets(committedOffsets(t, adm, group, topic), ends) }) {
		t.Errorf("after sarama-2 closed, OffsetFetch = %v, want the log end offsets %v", committedOffsets(t, adm, group, topic), ends)
	}
}

// ---- refusals ----

// coordinatorConn is a franz-go client whose requests go, unretried, to the coordinator
// of one group as FindCoordinator named it.
type coordinatorConn struct {
	t     *testing.T
	cl    *kgo.Client
	node  int32
	group string
	// rebalance is the rebalance timeout JoinGroups ask for; groupRebalance when zero.
	rebalance time.Duration
}

func findCoordinator(t *testing.T, b *Broker, group string) *coordinatorConn {
	t.Helper()
	cl := b.Client(t)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	req.CoordinatorKeys = []string{group}
	var node int32 = -1
	var last string
	if !eventually(20*time.Second, func() bool {
		resp, err := req.RequestWith(ctxFor(t, 10*time.Second), cl)
		if err != nil {
			last = err.Error()
			return false
		}
		code, id := resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) == 1 {
			code, id = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		last = kerrName(code)
		node = id
		return code == 0
	}) {
		t.Fatalf("FindCoordinator %s: %s", group, last)
	}
	return &coordinatorConn{t: t, cl: cl, node: node, group: group}
}

// do sends req to the coordinator and returns the response.
func (c *coordinatorConn) do(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	resp, err := c.cl.Broker(int(c.node)).Request(ctxFor(c.t, 20*time.Second), req)
	if err != nil {
		c.t.Fatalf("%s to the coordinator (node %d): %v", kmsg.NameForKey(req.Key()), c.node, err)
	}
	return resp
}

func consumerMetadata(topic string) []byte {
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{topic}
	return md.AppendTo(nil)
}

func consumerAssignment(topic string, parts ...int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = topic, parts
	a.Topics = append(a.Topics, at)
	return a.AppendTo(nil)
}

func (c *coordinatorConn) joinReq(memberID string, sessionMs int32, metadata []byte) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = c.group, memberID, "consumer"
	rebalance := c.rebalance
	if rebalance == 0 {
		rebalance = groupRebalance
	}
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = sessionMs, int32(rebalance.Milliseconds())
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", metadata
	req.Protocols = append(req.Protocols, p)
	return req
}

func (c *coordinatorConn) join(memberID string, sessionMs int32, metadata []byte) *kmsg.JoinGroupResponse {
	c.t.Helper()
	return c.do(c.joinReq(memberID, sessionMs, metadata)).(*kmsg.JoinGroupResponse)
}

func (c *coordinatorConn) sync(memberID string, gen int32, assignment []byte) *kmsg.SyncGroupResponse {
	c.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = c.group, memberID, gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = memberID, assignment
	req.GroupAssignment = append(req.GroupAssignment, a)
	return c.do(req).(*kmsg.SyncGroupResponse)
}

func (c *coordinatorConn) heartbeat(memberID string, gen int32) int16 {
	c.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = c.group, memberID, gen
	return c.do(req).(*kmsg.HeartbeatResponse).ErrorCode
}

// commit sends one OffsetCommit and returns the error code of each topic/partition, as
// "topic/partition" -> code.
func (c *coordinatorConn) commit(memberID string, gen int32, offsets map[string]map[int32]int64) map[string]int16 {
	c.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = c.group, memberID, gen
	for topic, ps := range offsets {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for p, o := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := c.do(req).(*kmsg.OffsetCommitResponse)
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = rp.ErrorCode
		}
	}
	return out
}

// fetchAll sends an OffsetFetch for every committed offset of the group and returns
// "topic/partition" -> offset.
func (c *coordinatorConn) fetchAll() map[string]int64 {
	c.t.Helper()
	return c.fetchReq(nil)
}

// fetch sends an OffsetFetch for the given partitions of topic.
func (c *coordinatorConn) fetch(topic string, parts ...int32) map[string]int64 {
	c.t.Helper()
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	return c.fetchReq([]kmsg.OffsetFetchRequestTopic{rt})
}

func (c *coordinatorConn) fetchReq(topics []kmsg.OffsetFetchRequestTopic) map[string]int64 {
	c.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = c.group
	req.Topics = topics
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = c.group
	for _, t := range topics {
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = t.Topic, t.Partitions
		rg.Topics = append(rg.Topics, gt)
	}
	req.Groups = append(req.Groups, rg)
	resp := c.do(req).(*kmsg.OffsetFetchResponse)
	out := map[string]int64{}
	add := func(topic string, p int32, o int64, code int16) {
		if code != 0 {
			c.t.Errorf("OffsetFetch %s %s[%d]: %s", c.group, topic, p, kerrName(code))
		}
		out[fmt.Sprintf("%s/%d", topic, p)] = o
	}
	if len(resp.Groups) > 0 {
		for _, g := range resp.Groups {
			if g.ErrorCode != 0 {
				c.t.Fatalf("OffsetFetch %s: %s", c.group, kerrName(g.ErrorCode))
			}
			for _, rt := range g.Topics {
				for _, rp := range rt.Partitions {
					add(rt.Topic, rp.Partition, rp.Offset, rp.ErrorCode)
				}
			}
		}
		return out
	}
	if resp.ErrorCode != 0 {
		c.t.Fatalf("OffsetFetch %s: %s", c.group, kerrName(resp.ErrorCode))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			add(rt.Topic, rp.Partition, rp.Offset, rp.ErrorCode)
		}
	}
	return out
}

// groupListed reports whether ListGroups names group.
func groupListed(t *testing.T, adm *kadm.Client, group string) bool {
	t.Helper()
	l, err := adm.ListGroups(ctxFor(t, 15*time.Second))
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	_, ok := l[group]
	return ok
}

// TestGroupBadInput: hand-built group requests sent straight to the coordinator get Kafka's
// error codes and change nothing: commits with a wrong generation, an unknown member, for
// a topic or partition that does not exist, or with too much metadata; a JoinGroup with
// 2 MiB of member metadata and a SyncGroup with a 2 MiB assignment (INVALID_REQUEST: the
// coordinator bounds what it keeps per member at 1 MiB, group.MaxProtocolMetadataBytes,
// documented in docs/operations.md; Kafka has no bound and would fail to store the group
// record); a Heartbeat with a stale generation; a session timeout outside
// [group.min.session.timeout.ms, group.max.session.timeout.ms]; and a few more (empty group
// id, no protocols, another protocol type, DeleteGroups of a live group, OffsetDelete of a
// subscribed topic). After each, a fresh connection is served and the group and its offsets
// are as before; after a restart the stored offsets are still only the accepted ones.
func TestGroupBadInput(t *testing.T) {
	t.Parallel()
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, missing = "bad-input", "bad-input-group", "no-such-topic"
	createTopic(t, adm, topic, 3, nil)
	c := findCoordinator(t, b, group)
	md := consumerMetadata(topic)

	// A real member: MEMBER_ID_REQUIRED, then the join with the given id, then the sync.
	jr := c.join("", int32(groupSession.Milliseconds()), md)
	if jr.ErrorCode != kerr.MemberIDRequired.Code || jr.MemberID == "" {
		t.Fatalf("first JoinGroup (v%d) without a member id: %s member %q, want MEMBER_ID_REQUIRED with an id", jr.Version, kerrName(jr.ErrorCode), jr.MemberID)
	}
	member := jr.MemberID
	jr = c.join(member, int32(groupSession.Milliseconds()), md)
	if jr.ErrorCode != 0 || jr.LeaderID != member || jr.Generation < 1 {
		t.Fatalf("JoinGroup with member id %s: %s generation %d leader %q", member, kerrName(jr.ErrorCode), jr.Generation, jr.LeaderID)
	}
	gen := jr.Generation
	if sr := c.sync(member, gen, consumerAssignment(topic, 0, 1, 2)); sr.ErrorCode != 0 {
		t.Fatalf("SyncGroup generation %d: %s", gen, kerrName(sr.ErrorCode))
	}
	if code := c.heartbeat(member, gen); code != 0 {
		t.Fatalf("Heartbeat generation %d: %s", gen, kerrName(code))
	}
	if res := c.commit(member, gen, map[string]map[int32]int64{topic: {0: 5}}); res[topic+"/0"] != 0 {
		t.Fatalf("a valid OffsetCommit: %v", res)
	}
	stored := map[string]int64{topic + "/0": 5}
	checkStored := func(after string) {
		t.Helper()
		if got := c.fetchAll(); fmt.Sprint(got) != fmt.Sprint(stored) {
			t.Errorf("after %s, OffsetFetch (all) = %v, want %v", after, got, stored)
			stored = got // report each step's changes once
		}
		metadataServed(t, b)
	}
	checkStored("a valid commit")

	t.Run("commit-wrong-generation", func(t *testing.T) {
		for _, g := range []int32{gen + 1, gen + 100} {
			res := c.commit(member, g, map[string]map[int32]int64{topic: {1: 7}})
			if res[topic+"/1"] != kerr.IllegalGeneration.Code {
				t.Errorf("OffsetCommit member %s generation %d (current %d): %s, want ILLEGAL_GENERATION(22)", member, g, gen, kerrName(res[topic+"/1"]))
			}
		}
		checkStored("commits with a wrong generation")
	})
	t.Run("commit-unknown-member", func(t *testing.T) {
		res := c.commit("no-such-member", gen, map[string]map[int32]int64{topic: {1: 7}})
		if res[topic+"/1"] != kerr.UnknownMemberID.Code {
			t.Errorf("OffsetCommit member no-such-member generation %d: %s, want UNKNOWN_MEMBER_ID(25)", gen, kerrName(res[topic+"/1"]))
		}
		checkStored("a commit from an unknown member")
	})
	t.Run("commit-missing-topic", func(t *testing.T) {
		res := c.commit(member, gen, map[string]map[int32]int64{missing: {0: 3}, topic: {2: 9}})
		if res[missing+"/0"] != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("OffsetCommit %s[0]: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", missing, kerrName(res[missing+"/0"]))
		}
		if res[topic+"/2"] != 0 {
			t.Errorf("OffsetCommit %s[2] in the same request: %s, want success", topic, kerrName(res[topic+"/2"]))
		} else {
			stored[topic+"/2"] = 9
		}
		res = c.commit(member, gen, map[string]map[int32]int64{topic: {3: 1}})
		if res[topic+"/3"] != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("OffsetCommit %s[3] (the topic has 3 partitions): %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", topic, kerrName(res[topic+"/3"]))
		}
		checkStored("commits to a missing topic and partition")
		if got := c.fetch(missing, 0); got[missing+"/0"] != -1 {
			t.Errorf("OffsetFetch %s[0] after the refused commit: %v, want offset -1 (nothing committed)", missing, got)
		}
	})
	t.Run("commit-metadata-too-large", func(t *testing.T) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = 1, 4, -1, kmsg.StringPtr(strings.Repeat("m", 4097))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.do(req).(*kmsg.OffsetCommitResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.OffsetMetadataTooLarge.Code {
			t.Errorf("OffsetCommit with 4097 bytes of metadata (offset.metadata.max.bytes 4096): %+v, want OFFSET_METADATA_TOO_LARGE(12)", resp.Topics)
		}
		checkStored("a commit with too much metadata")
	})
	t.Run("heartbeat-stale-generation", func(t *testing.T) {
		// The leader rejoins, which starts a new generation.
		jr := c.join(member, int32(groupSession.Milliseconds()), md)
		if jr.ErrorCode != 0 || jr.Generation != gen+1 {
			t.Fatalf("rejoin of the leader: %s generation %d, want generation %d", kerrName(jr.ErrorCode), jr.Generation, gen+1)
		}
		if sr := c.sync(member, jr.Generation, consumerAssignment(topic, 0, 1, 2)); sr.ErrorCode != 0 {
			t.Fatalf("SyncGroup generation %d: %s", jr.Generation, kerrName(sr.ErrorCode))
		}
		old := gen
		gen = jr.Generation
		if code := c.heartbeat(member, old); code != kerr.IllegalGeneration.Code {
			t.Errorf("Heartbeat with the stale generation %d (current %d): %s, want ILLEGAL_GENERATION(22)", old, gen, kerrName(code))
		}
		if code := c.heartbeat(member, gen); code != 0 {
			t.Errorf("Heartbeat with the current generation %d after the stale one: %s", gen, kerrName(code))
		}
		res := c.commit(member, old, map[string]map[int32]int64{topic: {1: 8}})
		if res[topic+"/1"] != kerr.IllegalGeneration.Code {
			t.Errorf("OffsetCommit with the stale generation %d: %s, want ILLEGAL_GENERATION(22)", old, kerrName(res[topic+"/1"]))
		}
		checkStored("a heartbeat and a commit with a stale generation")
	})

	// unchanged asserts the group is still Stable in the current generation with the one
	// member and the metadata it joined with (DescribeGroups, exact bytes), and that no
	// rebalance started.
	unchanged := func(after string) {
		t.Helper()
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp := c.do(req).(*kmsg.DescribeGroupsResponse)
		if len(resp.Groups) != 1 {
			t.Fatalf("DescribeGroups %s answered %d groups", group, len(resp.Groups))
		}
		d := resp.Groups[0]
		if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != member ||
			!bytes.Equal(d.Members[0].ProtocolMetadata, md) {
			var ms []string
			for _, m := range d.Members {
				ms = append(ms, fmt.Sprintf("%s (%d bytes of metadata)", m.MemberID, len(m.ProtocolMetadata)))
			}
			t.Errorf("after %s the group is %s %s members %v, want Stable with member %s and its %d bytes of metadata",
				after, kerrName(d.ErrorCode), d.State, ms, member, len(md))
		}
		if code := c.heartbeat(member, gen); code != 0 {
			t.Errorf("after %s, Heartbeat generation %d: %s, want no rebalance", after, gen, kerrName(code))
		}
		checkStored(after)
	}

	t.Run("session-timeout-out-of-range", func(t *testing.T) {
		for _, ms := range []int32{1000, 5999, 1800001} {
			fresh := &coordinatorConn{t: t, cl: c.cl, node: c.node, group: fmt.Sprintf("bad-session-%d", ms)}
			jr := fresh.join("", ms, md)
			if jr.ErrorCode != kerr.InvalidSessionTimeout.Code {
				t.Errorf("JoinGroup of a new group with session timeout %d ms: %s, want INVALID_SESSION_TIMEOUT(26)", ms, kerrName(jr.ErrorCode))
			}
			if groupListed(t, adm, fresh.group) {
				t.Errorf("group %s listed after the refused JoinGroup", fresh.group)
			}
			jr = c.join(member, ms, md)
			if jr.ErrorCode != kerr.InvalidSessionTimeout.Code {
				t.Errorf("rejoin of member %s with session timeout %d ms: %s, want INVALID_SESSION_TIMEOUT(26)", member, ms, kerrName(jr.ErrorCode))
			}
		}
		unchanged("JoinGroups with a session timeout out of range")
	})
	t.Run("oversized-metadata", func(t *testing.T) {
		big := append(slices.Clone(md), make([]byte, 2<<20)...)
		fresh := &coordinatorConn{t: t, cl: c.cl, node: c.node, group: "oversized-group"}
		jr := fresh.join("", int32(groupSession.Milliseconds()), big)
		if jr.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("JoinGroup of a new group with 2 MiB of protocol metadata: %s, want INVALID_REQUEST(42)", kerrName(jr.ErrorCode))
		}
		if groupListed(t, adm, fresh.group) {
			t.Errorf("group %s listed after the refused JoinGroup", fresh.group)
		}
		if d := describeGroup(t, adm, fresh.group); d.State != "Dead" || len(d.Members) != 0 {
			t.Errorf("group %s after the refused JoinGroup: %s, want Dead with no members", fresh.group, renderGroup(d, topic))
		}
		jr = c.join(member, int32(groupSession.Milliseconds()), big)
		if jr.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("rejoin of member %s with 2 MiB of protocol metadata: %s, want INVALID_REQUEST(42)", member, kerrName(jr.ErrorCode))
		}
		unchanged("JoinGroups with oversized metadata")
	})
	t.Run("oversized-assignment", func(t *testing.T) {
		// The leader rejoins (a new generation, CompletingRebalance) and hands itself a
		// 2 MiB assignment: refused, nothing kept; the proper SyncGroup still completes.
		jr := c.join(member, int32(groupSession.Milliseconds()), md)
		if jr.ErrorCode != 0 || jr.Generation != gen+1 {
			t.Fatalf("rejoin of the leader: %s generation %d, want generation %d", kerrName(jr.ErrorCode), jr.Generation, gen+1)
		}
		gen = jr.Generation
		big := append(consumerAssignment(topic, 0, 1, 2), make([]byte, 2<<20)...)
		if sr := c.sync(member, gen, big); sr.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("SyncGroup with a 2 MiB assignment: %s, want INVALID_REQUEST(42)", kerrName(sr.ErrorCode))
		}
		if d := describeGroup(t, adm, group); d.State != "CompletingRebalance" {
			t.Errorf("after the refused SyncGroup the group is %s, want still CompletingRebalance", renderGroup(d, topic))
		}
		metadataServed(t, b)
		sr := c.sync(member, gen, consumerAssignment(topic, 0, 1, 2))
		if sr.ErrorCode != 0 {
			t.Fatalf("SyncGroup generation %d after the refused one: %s", gen, kerrName(sr.ErrorCode))
		}
		if !bytes.Equal(sr.MemberAssignment, consumerAssignment(topic, 0, 1, 2)) {
			t.Errorf("SyncGroup answered an assignment of %d bytes, want the %d bytes the leader gave", len(sr.MemberAssignment), len(consumerAssignment(topic, 0, 1, 2)))
		}
		unchanged("a SyncGroup with an oversized assignment")
	})

	t.Run("other-refusals", func(t *testing.T) {
		// JoinGroup: an empty group id, no protocols, another protocol type.
		empty := &coordinatorConn{t: t, cl: c.cl, node: c.node, group: ""}
		if jr := empty.join("", int32(groupSession.Milliseconds()), md); jr.ErrorCode != kerr.InvalidGroupID.Code {
			t.Errorf("JoinGroup with an empty group id: %s, want INVALID_GROUP_ID(24)", kerrName(jr.ErrorCode))
		}
		req := c.joinReq(member, int32(groupSession.Milliseconds()), md)
		req.Protocols = nil
		if jr := c.do(req).(*kmsg.JoinGroupResponse); jr.ErrorCode != kerr.InconsistentGroupProtocol.Code {
			t.Errorf("JoinGroup offering no protocols: %s, want INCONSISTENT_GROUP_PROTOCOL(23)", kerrName(jr.ErrorCode))
		}
		req = c.joinReq("", int32(groupSession.Milliseconds()), md)
		req.ProtocolType = "connect"
		if jr := c.do(req).(*kmsg.JoinGroupResponse); jr.ErrorCode != kerr.InconsistentGroupProtocol.Code {
			t.Errorf("JoinGroup with protocol type connect into a consumer group: %s, want INCONSISTENT_GROUP_PROTOCOL(23)", kerrName(jr.ErrorCode))
		}
		// SyncGroup and Heartbeat from strangers or old generations.
		if sr := c.sync(member, gen-1, consumerAssignment(topic, 0)); sr.ErrorCode != kerr.IllegalGeneration.Code {
			t.Errorf("SyncGroup with the old generation %d: %s, want ILLEGAL_GENERATION(22)", gen-1, kerrName(sr.ErrorCode))
		}
		if code := c.heartbeat("no-such-member", gen); code != kerr.UnknownMemberID.Code {
			t.Errorf("Heartbeat from an unknown member: %s, want UNKNOWN_MEMBER_ID(25)", kerrName(code))
		}
		// A commit outside group management (generation -1) while the group has a member.
		res := c.commit("", -1, map[string]map[int32]int64{topic: {1: 6}})
		if res[topic+"/1"] != kerr.UnknownMemberID.Code {
			t.Errorf("OffsetCommit with generation -1 to a group with a member: %s, want UNKNOWN_MEMBER_ID(25)", kerrName(res[topic+"/1"]))
		}
		res = c.commit(member, gen, map[string]map[int32]int64{topic: {-1: 6}})
		if res[topic+"/-1"] != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("OffsetCommit to partition -1: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", kerrName(res[topic+"/-1"]))
		}
		// DeleteGroups of a group with a member, and of one that does not exist.
		dg := kmsg.NewPtrDeleteGroupsRequest()
		dg.Groups = []string{group}
		if r := c.do(dg).(*kmsg.DeleteGroupsResponse); len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
			t.Errorf("DeleteGroups of a group with a member: %+v, want NON_EMPTY_GROUP(68)", r.Groups)
		}
		gone := findCoordinator(t, b, "never-existed")
		dg.Groups = []string{"never-existed"}
		if r := gone.do(dg).(*kmsg.DeleteGroupsResponse); len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("DeleteGroups of a group that never existed: %+v, want GROUP_ID_NOT_FOUND(69)", r.Groups)
		}
		// OffsetDelete of a topic the member subscribes to.
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = group
		odt := kmsg.NewOffsetDeleteRequestTopic()
		odt.Topic = topic
		odp := kmsg.NewOffsetDeleteRequestTopicPartition()
		odp.Partition = 0
		odt.Partitions = append(odt.Partitions, odp)
		od.Topics = append(od.Topics, odt)
		r := c.do(od).(*kmsg.OffsetDeleteResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
			t.Errorf("OffsetDelete of %s[0], which the member subscribes to: %s %+v, want GROUP_SUBSCRIBED_TO_TOPIC(86) on the partition", topic, kerrName(r.ErrorCode), r.Topics)
		}
		unchanged("the other refused requests")
	})

	// What was refused stays refused across a restart: only the accepted commits replay.
	b.Restart()
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, (map[int32]int64{0: 5, 2: 9})) {
		t.Errorf("after a restart OffsetFetch %s = %v, want only the accepted commits {0:5 2:9}", topic, got)
	}
	resps, err := adm.FetchOffsets(ctxFor(t, 15*time.Second), group)
	if err != nil {
		t.Fatalf("OffsetFetch after the restart: %v", err)
	}
	if _, ok := resps[missing]; ok {
		t.Errorf("after a restart OffsetFetch (all) lists %s: %v", missing, resps[missing])
	}
	for _, g := range []string{"oversized-group", "bad-session-1000", "bad-session-5999", "bad-session-1800001"} {
		if groupListed(t, adm, g) {
			t.Errorf("after a restart, refused group %s is listed", g)
		}
	}
}

// joinNew joins c's group as a new member (MEMBER_ID_REQUIRED, then the join with the
// id) and returns the answer to the second JoinGroup.
func (c *coordinatorConn) joinNew(md []byte) *kmsg.JoinGroupResponse {
	c.t.Helper()
	jr := c.join("", int32(groupSession.Milliseconds()), md)
	if jr.ErrorCode != kerr.MemberIDRequired.Code || jr.MemberID == "" {
		c.t.Fatalf("JoinGroup %s without a member id: %s member %q, want MEMBER_ID_REQUIRED with an id", c.group, kerrName(jr.ErrorCode), jr.MemberID)
	}
	return c.join(jr.MemberID, int32(groupSession.Milliseconds()), md)
}

// TestGroupRebalanceTimeout: rebalance.timeout.ms is honoured with hand-built members
// (rebalance timeout 3 s, session timeout 6 s, so that expiry by session cannot be what
// acts). A member that joins but never sends SyncGroup is expelled once the rebalance
// timeout passes, leaving the group Empty. A member that keeps heartbeating but does not
// rejoin when a newcomer starts a rebalance is expelled at the rebalance timeout: the
// newcomer's JoinGroup then completes with itself alone, and the old member is unknown.
func TestGroupRebalanceTimeout(t *testing.T) {
	t.Parallel()
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, rebalance = "rebalance-timeout", 3 * time.Second
	createTopic(t, adm, topic, 2, nil)
	md := consumerMetadata(topic)

	t.Run("no-sync", func(t *testing.T) {
		t.Parallel()
		c := findCoordinator(t, b, "no-sync-group")
		c.rebalance = rebalance
		jr := c.joinNew(md)
		if jr.ErrorCode != 0 || jr.LeaderID != jr.MemberID {
			t.Fatalf("JoinGroup: %s leader %q member %q", kerrName(jr.ErrorCode), jr.LeaderID, jr.MemberID)
		}
		joined := time.Now()
		var last kadm.DescribedGroup
		if !eventually(rebalance+5*time.Second, func() bool {
			last = describeGroup(t, adm, c.group)
			return last.State == "Empty" && len(last.Members) == 0
		}) {
			t.Fatalf("a member that never sent SyncGroup is still there %v after its join: %s", rebalance+5*time.Second, renderGroup(last, topic))
		}
		took := time.Since(joined)
		t.Logf("expelled %v after the join phase", took)
		if took < rebalance-500*time.Millisecond {
			t.Errorf("the member was expelled %v after the join phase, before its rebalance timeout %v", took, rebalance)
		}
		if code := c.heartbeat(jr.MemberID, jr.Generation); code != kerr.UnknownMemberID.Code {
			t.Errorf("Heartbeat of the expelled member: %s, want UNKNOWN_MEMBER_ID(25)", kerrName(code))
		}
	})

	t.Run("no-rejoin", func(t *testing.T) {
		t.Parallel()
		c := findCoordinator(t, b, "no-rejoin-group")
		c.rebalance = rebalance
		old := c.joinNew(md)
		if old.ErrorCode != 0 {
			t.Fatalf("JoinGroup: %s", kerrName(old.ErrorCode))
		}
		if sr := c.sync(old.MemberID, old.Generation, consumerAssignment(topic, 0, 1)); sr.ErrorCode != 0 {
			t.Fatalf("SyncGroup: %s", kerrName(sr.ErrorCode))
		}
		// The old member heartbeats (keeping its session) but never rejoins.
		stop := make(chan struct{})
		beats := make(chan []int16, 1)
		go func() {
			var codes []int16
			defer func() { beats <- codes }()
			for {
				select {
				case <-stop:
					return
				case <-time.After(groupHeartbeat):
				}
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group, req.MemberID, req.Generation = c.group, old.MemberID, old.Generation
				hctx, hcancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := c.cl.Broker(int(c.node)).Request(hctx, req)
				hcancel()
				if err != nil {
					return
				}
				codes = append(codes, resp.(*kmsg.HeartbeatResponse).ErrorCode)
			}
		}()
		newcomer := findCoordinator(t, b, c.group) // its own connection
		newcomer.rebalance = rebalance
		start := time.Now()
		jr := newcomer.joinNew(md)
		took := time.Since(start)
		close(stop)
		codes := <-beats
		t.Logf("the newcomer's JoinGroup answered after %v; the old member's heartbeats: %v", took, codes)
		if jr.ErrorCode != 0 || jr.Generation != old.Generation+1 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 {
			t.Errorf("the newcomer's JoinGroup: %s generation %d leader %q with %d members, want generation %d led by itself alone",
				kerrName(jr.ErrorCode), jr.Generation, jr.LeaderID, len(jr.Members), old.Generation+1)
		}
		if took < rebalance-500*time.Millisecond || took > groupSession {
			t.Errorf("the join phase ended %v after the newcomer joined, want about the rebalance timeout %v (and before the session timeout %v)", took, rebalance, groupSession)
		}
		if !slices.Contains(codes, kerr.RebalanceInProgress.Code) {
			t.Errorf("the old member's heartbeats during the join phase were answered %v, want REBALANCE_IN_PROGRESS(27) among them", codes)
		}
		if code := c.heartbeat(old.MemberID, old.Generation); code != kerr.UnknownMemberID.Code {
			t.Errorf("Heartbeat of the member that did not rejoin: %s, want UNKNOWN_MEMBER_ID(25)", kerrName(code))
		}
	})
}

// TestGroupInitialRebalanceDelay: group.initial.rebalance.delay.ms. With the default 3 s,
// two members that join an empty group within the delay are answered together in its first
// generation (one assignment instead of two rebalances), no sooner than the delay; set to 0
// at run time (IncrementalAlterConfigs on the cluster resource), a lone member of a new
// group is answered at once.
func TestGroupInitialRebalanceDelay(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	const topic, delay = "initial-delay", 3 * time.Second
	createTopic(t, adm, topic, 2, nil)
	md := consumerMetadata(topic)

	c := findCoordinator(t, b, "delayed-group")
	start := time.Now()
	first := make(chan *kmsg.JoinGroupResponse, 1)
	jctx := ctxFor(t, 30*time.Second)
	go func() {
		req := c.joinReq("", int32(groupSession.Milliseconds()), md)
		resp, err := c.cl.Broker(int(c.node)).Request(jctx, req)
		if err != nil {
			first <- nil
			return
		}
		jr := resp.(*kmsg.JoinGroupResponse)
		req.MemberID = jr.MemberID
		resp, err = c.cl.Broker(int(c.node)).Request(jctx, req)
		if err != nil {
			first <- nil
			return
		}
		first <- resp.(*kmsg.JoinGroupResponse)
	}()
	if !eventually(5*time.Second, func() bool {
		d := describeGroup(t, adm, c.group)
		return d.State == "PreparingRebalance" && len(d.Members) == 1
	}) {
		t.Fatalf("the first member's join did not start the group's first rebalance")
	}
	// A second client: a connection answers its requests in order, so a JoinGroup waiting
	// for the rebalance holds back whatever follows it on the same connection.
	second := findCoordinator(t, b, c.group).joinNew(md)
	a := <-first
	took := time.Since(start)
	if a == nil {
		t.Fatalf("the first member's JoinGroup failed")
	}
	t.Logf("both joins answered %v after the first", took)
	if a.ErrorCode != 0 || second.ErrorCode != 0 || a.Generation != 1 || second.Generation != 1 {
		t.Errorf("JoinGroups: %s generation %d and %s generation %d, want both in generation 1",
			kerrName(a.ErrorCode), a.Generation, kerrName(second.ErrorCode), second.Generation)
	}
	if lead := max(len(a.Members), len(second.Members)); lead != 2 {
		t.Errorf("the leader was given %d members, want both", lead)
	}
	if took < delay-500*time.Millisecond {
		t.Errorf("the first generation formed %v after the first join, before group.initial.rebalance.delay.ms (%v)", took, delay)
	}

	setCluster(t, adm, "group.initial.rebalance.delay.ms", "0")
	quick := findCoordinator(t, b, "undelayed-group")
	start = time.Now()
	if jr := quick.joinNew(md); jr.ErrorCode != 0 || jr.Generation != 1 {
		t.Errorf("JoinGroup with the delay at 0: %s generation %d", kerrName(jr.ErrorCode), jr.Generation)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("with group.initial.rebalance.delay.ms=0 a lone member waited %v for its first generation", took)
	}
}

// ---- cairn group CLI ----

// lagRow finds the describe table row of topic/partition: committed, log end, lag.
func lagRow(out, topic string, p int32) ([]string, bool) {
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) >= 6 && f[0] == topic && f[1] == strconv.Itoa(int(p)) {
			return f[3:6], true
		}
	}
	return nil, false
}

// TestGroupCLI: `cairn group list/describe/seek/delete` against a real broker and a live
// franz-go member: list and describe show the member, its assignment and the lag per
// partition; seek is refused while the group has a member and works once it is empty (a
// new member then re-reads from the start); delete removes the empty group.
func TestGroupCLI(t *testing.T) {
	t.Parallel()
	b := groupBroker(t)
	adm := b.Admin(t)
	const topic, group, parts = "cli-group-topic", "cli-group", int32(3)
	createTopic(t, adm, topic, parts, nil)
	prod := producer(t, b)
	first := produceRoundRobin(t, prod, topic, parts, "first", 30)

	rec := newReceived()
	m := startKgoMember(t, b, group, topic, "cli-member", rec, 100, func() bool { return rec.hasAll(first) })
	waitDone(t, m, rec, len(first))
	m.stopPolling() // still a member, heartbeating, with everything so far committed
	split := waitSplit(t, adm, group, topic, parts, 20*time.Second, "cli-member")
	memberID := describeGroup(t, adm, group).Members[0].MemberID
	// Records the member will not read: partition 0 lags by 7.
	lagging := produceRoundRobin(t, prod, topic, 1, "lag", 7)

	r := cairnCLI(t, b, "", "group", "list")
	found := false
	for _, l := range lines(r.Stdout) {
		if f := strings.Fields(l); len(f) == 4 && f[0] == group {
			found = true
			if f[1] != "Stable" || f[2] != "consumer" || f[3] != "1" {
				t.Errorf("group list row %q, want %s Stable consumer 1", l, group)
			}
		}
	}
	if !found {
		t.Errorf("group list does not show %s:\n%s", group, r.Stdout)
	}

	r = cairnCLI(t, b, "", "group", "describe", group)
	t.Logf("cairn group describe %s:\n%s", group, r.Stdout)
	for _, w := range []string{"Group: " + group, "State: Stable", "Protocol type: consumer", "Members: 1", memberID, "cli-member",
		fmt.Sprintf("%s%s", topic, strings.ReplaceAll(fmt.Sprint(split["cli-member"]), " ", ","))} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("group describe output lacks %q:\n%s", w, r.Stdout)
		}
	}
	ends := endOffsets(t, adm, topic)
	committed := committedOffsets(t, adm, group, topic)
	for p := int32(0); p < parts; p++ {
		row, ok := lagRow(r.Stdout, topic, p)
		want := []string{strconv.FormatInt(committed[p], 10), strconv.FormatInt(ends[p], 10), strconv.FormatInt(ends[p]-committed[p], 10)}
		if !ok || fmt.Sprint(row) != fmt.Sprint(want) {
			t.Errorf("describe row for %s[%d]: %v, want committed/log-end/lag %v\n%s", topic, p, row, want, r.Stdout)
		}
	}
	if committed[0] != ends[0]-int64(len(lagging)) {
		t.Errorf("partition 0 committed %d, log end %d: the test expected a lag of %d", committed[0], ends[0], len(lagging))
	}
	if !strings.Contains(r.Stdout, fmt.Sprintf("Total lag: %d", len(lagging))) {
		t.Errorf("describe output lacks \"Total lag: %d\":\n%s", len(lagging), r.Stdout)
	}

	// seek is refused while the group has a member, and commits nothing.
	args := []string{"group", "seek", group, "--topic", topic, "--to-earliest", "--brokers", b.KafkaAddr}
	r = run(t, 60*time.Second, "", cairnBin, args...)
	if r.Err == nil {
		t.Errorf("group seek --to-earliest with a live member succeeded:\n%s", r)
	} else if !strings.Contains(r.Stderr+r.Stdout, "Empty") {
		t.Errorf("group seek refused without saying the group must be Empty:\n%s", r)
	}
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, committed) {
		t.Errorf("after the refused seek, committed offsets %v, want unchanged %v", got, committed)
	}
	r = run(t, 60*time.Second, "", cairnBin, "group", "delete", group, "--brokers", b.KafkaAddr)
	if r.Err == nil || !strings.Contains(r.Stdout, "NON_EMPTY_GROUP") && !strings.Contains(r.Stdout+r.Stderr, "members") {
		t.Errorf("group delete with a live member: want a refusal naming the members:\n%s", r)
	}

	m.close() // leaves the group
	if d := describeGroup(t, adm, group); d.State != "Empty" {
		t.Fatalf("after the member left: %s, want Empty", renderGroup(d, topic))
	}
	// A dry run shows the move and commits nothing; --to-offset on one partition moves
	// only that one.
	r = cairnCLI(t, b, "", "group", "seek", group, "--topic", topic, "--to-latest", "--dry-run")
	if !strings.Contains(r.Stdout, "dry run") {
		t.Errorf("group seek --dry-run output lacks \"dry run\":\n%s", r.Stdout)
	}
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, committed) {
		t.Errorf("after seek --dry-run, committed offsets %v, want unchanged %v", got, committed)
	}
	cairnCLI(t, b, "", "group", "seek", group, "--topic", topic, "--partitions", "1", "--to-offset", "4")
	moved := maps.Clone(committed)
	moved[1] = 4
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, moved) {
		t.Errorf("after seek --partitions 1 --to-offset 4, committed offsets %v, want %v", got, moved)
	}
	r = cairnCLI(t, b, "", "group", "seek", group, "--topic", topic, "--to-earliest")
	if !strings.Contains(r.Stdout, "committed new offsets for 3 partitions") {
		t.Errorf("group seek --to-earliest output:\n%s", r.Stdout)
	}
	zero := map[int32]int64{0: 0, 1: 0, 2: 0}
	if got := committedOffsets(t, adm, group, topic); !sameOffsets(got, zero) {
		t.Errorf("after seek --to-earliest, committed offsets %v, want %v", got, zero)
	}
	rec2 := newReceived()
	all := append(slices.Clone(first), lagging...)
	m2 := startKgoMember(t, b, group, topic, "cli-member-2", rec2, 100, func() bool { return rec2.hasAll(all) })
	waitDone(t, m2, rec2, len(all))
	m2.close()
	checkResumed(t, rec2.byMember()["cli-member-2"], zero, all)

	r = cairnCLI(t, b, "", "group", "delete", group)
	if !strings.Contains(r.Stdout, "deleted group "+group) {
		t.Errorf("group delete output:\n%s", r.Stdout)
	}
	r = cairnCLI(t, b, "", "group", "list")
	if strings.Contains(r.Stdout, group) {
		t.Errorf("group list still shows %s after delete:\n%s", group, r.Stdout)
	}
	if got := committedOffsets(t, adm, group, topic); len(got) != 0 {
		t.Errorf("after delete, committed offsets %v, want none", got)
	}
	r = run(t, 60*time.Second, "", cairnBin, "group", "describe", group, "--brokers", b.KafkaAddr)
	if r.Err == nil || !strings.Contains(r.Stderr, "no such group") {
		t.Errorf("group describe of the deleted group: want an error saying there is no such group:\n%s", r)
	}
}
