package e2e

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// `cairn cluster` against real brokers.

// clusterCLI runs `cairn cluster args...` against b's admin API and Kafka listener and
// returns its output and exit code (-1: it did not run to an exit).
func clusterCLI(t *testing.T, b *Broker, args ...string) (cmdResult, int) {
	t.Helper()
	return clusterCLIInput(t, b, "", args...)
}

// clusterCLIInput is clusterCLI with stdin (an operator's answers to its questions).
func clusterCLIInput(t *testing.T, b *Broker, stdin string, args ...string) (cmdResult, int) {
	t.Helper()
	full := append([]string{"cluster", "--admin-url", "http://" + b.AdminAddr, "--brokers", b.KafkaAddr}, args...)
	r := run(t, 60*time.Second, stdin, cairnBin, full...)
	code := 0
	if r.Err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(r.Err, &ee) {
			code = ee.ExitCode()
		}
	}
	return r, code
}

// waitHealth polls `cairn cluster health` on b until it exits with code and its report
// holds every one of want, and returns that report.
func waitHealth(t *testing.T, b *Broker, code int, timeout time.Duration, want ...string) string {
	t.Helper()
	var last cmdResult
	lastCode := -2
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		last, lastCode = clusterCLI(t, b, "health")
		if lastCode == code && containsAll(last.Stdout, want) {
			return last.Stdout
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("cairn cluster health did not exit %d with %q within %v; last exit %d:\n%s", code, want, timeout, lastCode, last)
	return ""
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestClusterCLIHealthBrokersAndConfig(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	adm := bs[0].Admin(t)
	resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 3, 3, nil, "health-t")
	if err != nil || resp.Err != nil {
		t.Fatalf("creating health-t: %v %v", err, resp.Err)
	}

	waitHealth(t, bs[0], 0, 30*time.Second, "Cluster:          healthy", "Brokers:          1, 2, 3",
		"Down:             none", "Leaderless:       none", "Under-replicated: none", "Under min ISR:    none")

	r, code := clusterCLI(t, bs[1], "brokers")
	ls := lines(r.Stdout)
	if code != 0 || len(ls) != 4 || !strings.HasPrefix(ls[0], "ID") {
		t.Fatalf("cluster brokers: want a header and 3 brokers: exit %d\n%s", code, r)
	}
	for i, l := range ls[1:] {
		f := strings.Fields(l)
		if len(f) < 5 || f[0] != strconv.Itoa(i+1) || f[1] != bs[i].KafkaAddr || f[4] != "up" {
			t.Errorf("broker line %q: want id %d at %s, up", l, i+1, bs[i].KafkaAddr)
		}
	}

	// Cluster properties: set, read back from another broker, delete, and bad input.
	if r, code := clusterCLI(t, bs[0], "config", "set", "log.retention.ms=3600000"); code != 0 ||
		!strings.Contains(r.Stdout, "changed cluster properties: set log.retention.ms=3600000") {
		t.Fatalf("config set: %s", r)
	}
	waitFor(t, 10*time.Second, func() bool {
		r, code := clusterCLI(t, bs[2], "config", "get", "log.retention.ms")
		return code == 0 && len(lines(r.Stdout)) == 2 && strings.Fields(lines(r.Stdout)[1])[1] == "3600000" &&
			strings.Fields(lines(r.Stdout)[1])[2] == "cluster"
	})
	if r, code := clusterCLI(t, bs[0], "config", "set", "--delete", "log.retention.ms"); code != 0 {
		t.Fatalf("config set --delete: %s", r)
	}
	r, code = clusterCLI(t, bs[0], "config", "get", "log.retention.ms", "--json")
	if code != 0 || !strings.Contains(r.Stdout, `"name":"log.retention.ms"`) || !strings.Contains(r.Stdout, `"source":"default"`) {
		t.Errorf("after --delete: %s", r)
	}
	r, code = clusterCLI(t, bs[0], "config", "get")
	if code != 0 || !strings.Contains(r.Stdout, "min.insync.racks") || strings.Contains(r.Stdout, "(read-only)") {
		t.Errorf("config get lists cluster properties only: %s", r)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "set", "no.such.property=1"}, "no.such.property"},
		{[]string{"config", "set", "log.retention.ms=soon"}, "log.retention.ms"},
		{[]string{"config", "get", "no.such.property"}, `unknown cluster property "no.such.property"`},
		{[]string{"partitions", "move", "health-t", "--replicas", "1,2,3"}, `invalid partition "health-t": want TOPIC/PARTITION`},
		{[]string{"partitions", "move", "health-t/one", "--replicas", "1,2,3"}, `the partition must be a number from 0, got "one"`},
		{[]string{"leaders", "transfer", "health-t/0/1", "--to", "2"}, "invalid partition"},
	} {
		r, code := clusterCLI(t, bs[0], c.args...)
		if code != 1 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("cairn cluster %s: exit %d, want 1 with %q on stderr:\n%s", strings.Join(c.args, " "), code, c.want, r)
		}
	}
	if r, _ := clusterCLI(t, bs[0], "config", "get", "log.retention.ms"); !strings.Contains(r.Stdout, "default") {
		t.Errorf("a refused set changed the property: %s", r)
	}

	// One broker gone: the others report it down and its replicas' partitions under-replicated.
	bs[2].Kill9()
	waitHealth(t, bs[0], 1, 30*time.Second, "Cluster:          UNHEALTHY", "Down:             3",
		"Leaderless:       none", "Under-replicated: 3 partitions: health-t/0, health-t/1, health-t/2")
	r, code = clusterCLI(t, bs[1], "health", "--json")
	if code != 1 || !strings.Contains(r.Stdout, `"healthy":false`) || !strings.Contains(r.Stdout, `"nodes_down":[3]`) {
		t.Errorf("health --json on broker 2: exit %d:\n%s", code, r)
	}
	if r, code := clusterCLI(t, bs[0], "brokers"); code != 0 || !strings.Contains(r.Stdout, "DOWN") {
		t.Errorf("cluster brokers after the kill: %s", r)
	}
}

// TestClusterCLIMovesLeadershipAndMaintenance runs the `cairn cluster` commands that change
// the cluster against real brokers: a move to other brokers followed to its end, a
// refused move, a leadership transfer, and maintenance on and off.
func TestClusterCLIMovesLeadershipAndMaintenance(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 4)
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "cli-mv", []int32{1, 2, 3}, nil)
	produceSync(t, cl, "cli-mv", "before", 100)

	if r, code := clusterCLI(t, bs[1], "partitions", "move", "cli-mv/0", "--replicas", "2,3,4"); code != 0 || !strings.Contains(r.Stdout, "moving cli-mv/0 to replicas") {
		t.Fatalf("partitions move: exit %d\n%s", code, r)
	}
	waitMoved(t, kadm.NewClient(cl), "cli-mv", []int32{2, 3, 4}, 60*time.Second)
	if r, code := clusterCLI(t, bs[1], "partitions", "move-status", "--json"); code != 0 || strings.TrimSpace(r.Stdout) != "[]" {
		t.Errorf("move-status once the move is done: exit %d\n%s", code, r)
	}
	if r, code := clusterCLI(t, bs[1], "partitions", "move", "cli-mv/0", "--replicas", "2,2,4"); code == 0 || !strings.Contains(r.Stderr, "more than once") {
		t.Errorf("a move naming a broker twice: exit %d\n%s", code, r)
	}
	got := consumeAll(t, bs[3], "cli-mv", 1, 100)
	if len(got) != 100 {
		t.Fatalf("read %d records after the move, want 100", len(got))
	}

	if r, code := clusterCLI(t, bs[0], "leaders", "transfer", "cli-mv/0", "--to", "4"); code != 0 || !strings.Contains(r.Stdout, "handed to broker 4") {
		t.Fatalf("leaders transfer: exit %d\n%s", code, r)
	}
	if r, code := clusterCLI(t, bs[0], "leaders", "transfer", "cli-mv/0", "--to", "1"); code == 0 {
		t.Errorf("transfer to a broker that holds no replica: exit 0\n%s", r)
	}

	if r, code := clusterCLI(t, bs[0], "maintenance", "enable", "4"); code != 0 {
		t.Fatalf("maintenance enable: exit %d\n%s", code, r)
	}
	waitFor(t, 60*time.Second, func() bool {
		r, code := clusterCLI(t, bs[0], "maintenance", "status", "4")
		return code == 0 && strings.Contains(r.Stdout, "Leaderships left: 0")
	})
	if st, ok := adminPartition(bs[3], "cli-mv", 0); !ok || st.IsLeader {
		t.Errorf("broker 4 in maintenance still leads cli-mv/0 (%+v, %v)", st, ok)
	}
	if r, code := clusterCLI(t, bs[0], "maintenance", "disable", "4"); code != 0 {
		t.Fatalf("maintenance disable: exit %d\n%s", code, r)
	}
}
