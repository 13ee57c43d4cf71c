package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// cairnCLI runs a cairn client subcommand against b and fails the test if it fails.
func cairnCLI(t *testing.T, b *Broker, stdin string, args ...string) cmdResult {
	t.Helper()
	args = append(args, "--brokers", b.KafkaAddr)
	r := run(t, 60*time.Second, stdin, cairnBin, args...)
	if r.Err != nil {
		t.Fatalf("cairn %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// TestCLI: the cairn client subcommands against a running broker.
func TestCLI(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "cli-topic"

	r := cairnCLI(t, b, "", "topic", "create", topic, "--partitions", "3", "--replicas", "1")
	if !strings.Contains(r.Stdout, "created topic "+topic) {
		t.Errorf("topic create output lacks %q:\n%s", "created topic "+topic, r.Stdout)
	}
	r = cairnCLI(t, b, "", "topic", "list")
	if !strings.Contains(r.Stdout, topic) {
		t.Errorf("topic list does not show %s:\n%s", topic, r.Stdout)
	}

	const n = 60
	var in, want []string
	for i := 0; i < n; i++ {
		in = append(in, fmt.Sprintf("key%d:val:%d", i%7, i)) // the value keeps its own ':'
		want = append(want, fmt.Sprintf("key%d=val:%d", i%7, i))
	}
	cairnCLI(t, b, strings.Join(in, "\n")+"\n", "produce", topic, "-k", ":")

	r = cairnCLI(t, b, "", "consume", topic, "-o", "beginning", "-n", fmt.Sprint(n), "-f", `%k=%v\n`, "--timeout", "20s")
	got := lines(r.Stdout)
	if len(got) != n {
		t.Errorf("consume -n %d printed %d lines:\n%s", n, len(got), r.Stdout)
	}
	// Per key the order is the produce order (one key, one partition).
	byKey := func(ls []string) map[string][]string {
		m := map[string][]string{}
		for _, l := range ls {
			k, _, _ := strings.Cut(l, "=")
			m[k] = append(m[k], l)
		}
		return m
	}
	gk, wk := byKey(got), byKey(want)
	for k, w := range wk {
		if !slices.Equal(gk[k], w) {
			t.Errorf("key %s: consumed %q, want %q", k, gk[k], w)
		}
	}

	r = cairnCLI(t, b, "", "topic", "describe", topic)
	for _, w := range []string{"Topic: " + topic, "Partitions: 3", "Replication factor: 1"} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("topic describe output lacks %q:\n%s", w, r.Stdout)
		}
	}
	ends := endOffsets(t, b.Admin(t), topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	if total != n {
		t.Errorf("end offsets after producing %d lines sum to %d (%v)", n, total, ends)
	}

	cairnCLI(t, b, "", "topic", "alter-config", topic, "--set", "retention.ms=1000")
	rcs, err := b.Admin(t).DescribeTopicConfigs(ctxFor(t, 15*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs %s: %v %v", topic, err, rc.Err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.Value == nil || *c.Value != "1000" {
				t.Errorf("after alter-config --set retention.ms=1000, DescribeConfigs says %v", c.MaybeValue())
			}
		}
	}
	if !found {
		t.Errorf("DescribeConfigs of %s lacks retention.ms", topic)
	}
	r = cairnCLI(t, b, "", "topic", "describe", topic)
	if !strings.Contains(r.Stdout, "retention.ms") || !strings.Contains(r.Stdout, "1000") {
		t.Errorf("topic describe after alter-config does not show retention.ms 1000:\n%s", r.Stdout)
	}

	r = cairnCLI(t, b, "", "topic", "delete", topic)
	if !strings.Contains(r.Stdout, "deleted topic "+topic) {
		t.Errorf("topic delete output lacks %q:\n%s", "deleted topic "+topic, r.Stdout)
	}
	r = cairnCLI(t, b, "", "topic", "list")
	if strings.Contains(r.Stdout, topic) {
		t.Errorf("topic list still shows %s after delete:\n%s", topic, r.Stdout)
	}
}
