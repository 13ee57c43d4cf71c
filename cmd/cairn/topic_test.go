package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTopicCreateListDescribeDelete(t *testing.T) {
	addr := newFakeCluster(t, 0)

	out := mustRun(t, "", "topic", "create", "-b", addr, "orders", "-p", "4", "-r", "1", "-c", "retention.ms=60000", "--config", "cleanup.policy=compact")
	if want := "created topic orders (partitions: 4, replicas: 1)\n"; out != want {
		t.Errorf("create output %q, want %q", out, want)
	}
	// -1 defaults come from the broker (the fake's default is 3 partitions).
	out = mustRun(t, "", "topic", "-b", addr, "create", "events", "payments")
	for _, want := range []string{"created topic events (partitions: 3, replicas: 1)", "created topic payments (partitions: 3, replicas: 1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("create output %q lacks %q", out, want)
		}
	}

	// Creating an existing topic reports the error per topic and fails.
	r := wantErr(t, "", []string{"topic", "create", "-b", addr, "orders", "fresh"}, "1 of 2 topics failed")
	if !strings.Contains(r.out, "orders: error: TOPIC_ALREADY_EXISTS") || !strings.Contains(r.out, "created topic fresh") {
		t.Errorf("create output:\n%s", r.out)
	}

	// Validate-only creates nothing.
	out = mustRun(t, "", "topic", "create", "-b", addr, "--validate-only", "ghost", "-p", "2")
	if !strings.HasPrefix(out, "validated topic ghost (partitions: 2") {
		t.Errorf("validate-only output %q", out)
	}

	out = mustRun(t, "", "topic", "list", "-b", addr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("list: want header and 4 topics, got:\n%s", out)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "TOPIC PARTITIONS REPLICAS" {
		t.Errorf("list header %q", lines[0])
	}
	wantRows := []string{"events 3 1", "fresh 3 1", "orders 4 1", "payments 3 1"}
	for i, w := range wantRows {
		if got := strings.Join(strings.Fields(lines[i+1]), " "); got != w {
			t.Errorf("list row %d = %q, want %q", i, got, w)
		}
	}

	// Records so that describe has offsets to show.
	mustRun(t, "a\nb\nc\n", "produce", "-b", addr, "orders", "--partition", "2")
	out = mustRun(t, "", "topic", "describe", "-b", addr, "orders")
	for _, want := range []string{"Topic: orders", "Partitions: 4", "Replication factor: 1", "LOG-START", "HIGH-WATERMARK"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe output lacks %q:\n%s", want, out)
		}
	}
	// Partition 2 has the three records: log start 0, high watermark 3.
	if !regexp.MustCompile(`(?m)^2\s+\d+\s+\d+\s+\[\d+\]\s+\[\d+\]\s+0\s+3\s+\[krack\]\s+1/1 ok\s+off\s*$`).MatchString(out) {
		t.Errorf("describe: partition 2 row not as expected:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^0\s+\d+\s+\d+\s+\[\d+\]\s+\[\d+\]\s+0\s+0\s+\[krack\]\s+1/1 ok\s+off\s*$`).MatchString(out) {
		t.Errorf("describe: partition 0 row not as expected:\n%s", out)
	}
	// Only the topic's own configs by default, with their source.
	if !regexp.MustCompile(`(?m)^retention\.ms\s+60000\s+DYNAMIC_TOPIC_CONFIG\s*$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^cleanup\.policy\s+compact\s+DYNAMIC_TOPIC_CONFIG\s*$`).MatchString(out) {
		t.Errorf("describe: topic configs missing:\n%s", out)
	}
	if strings.Contains(out, "DEFAULT_CONFIG") {
		t.Errorf("describe without --all-configs shows defaults:\n%s", out)
	}
	out = mustRun(t, "", "topic", "describe", "-b", addr, "orders", "--all-configs")
	if !regexp.MustCompile(`(?m)^max\.message\.bytes\s+\d+\s+DEFAULT_CONFIG\s*$`).MatchString(out) {
		t.Errorf("describe --all-configs lacks defaults:\n%s", out)
	}
	out = mustRun(t, "", "topic", "describe", "-b", addr, "events")
	if !strings.Contains(out, "Configs: all defaults") {
		t.Errorf("describe of a topic without overrides:\n%s", out)
	}

	wantErr(t, "", []string{"topic", "describe", "-b", addr, "nope"}, "nope", "UNKNOWN_TOPIC_OR_PARTITION")

	out = mustRun(t, "", "topic", "delete", "-b", addr, "events", "payments")
	if out != "deleted topic events\ndeleted topic payments\n" {
		t.Errorf("delete output %q", out)
	}
	r = wantErr(t, "", []string{"topic", "delete", "-b", addr, "events"}, "1 of 1 topics failed")
	if !strings.Contains(r.out, "events: error: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("delete of a missing topic: %q", r.out)
	}
	out = mustRun(t, "", "topic", "list", "-b", addr)
	if strings.Contains(out, "events") || strings.Contains(out, "payments") || !strings.Contains(out, "orders") {
		t.Errorf("list after delete:\n%s", out)
	}
}

func TestTopicAlterConfig(t *testing.T) {
	addr := newFakeCluster(t, 1, "t")

	out := mustRun(t, "", "topic", "alter-config", "-b", addr, "t", "--set", "retention.ms=1234", "--set", "max.message.bytes=2048")
	if out != "altered configs of topic t: set retention.ms=1234, set max.message.bytes=2048\n" {
		t.Errorf("alter output %q", out)
	}
	out = mustRun(t, "", "topic", "describe", "-b", addr, "t")
	if !regexp.MustCompile(`(?m)^retention\.ms\s+1234\s+DYNAMIC_TOPIC_CONFIG`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^max\.message\.bytes\s+2048\s+DYNAMIC_TOPIC_CONFIG`).MatchString(out) {
		t.Fatalf("describe after alter:\n%s", out)
	}

	out = mustRun(t, "", "topic", "alter-config", "-b", addr, "t", "--delete", "retention.ms")
	if out != "altered configs of topic t: deleted retention.ms\n" {
		t.Errorf("alter --delete output %q", out)
	}
	out = mustRun(t, "", "topic", "describe", "-b", addr, "t")
	if strings.Contains(out, "retention.ms") || !strings.Contains(out, "max.message.bytes") {
		t.Errorf("describe after delete:\n%s", out)
	}

	// Validate-only leaves the config alone.
	mustRun(t, "", "topic", "alter-config", "-b", addr, "t", "--set", "retention.ms=5", "--validate-only")
	if out := mustRun(t, "", "topic", "describe", "-b", addr, "t"); strings.Contains(out, "retention.ms") {
		t.Errorf("validate-only changed the config:\n%s", out)
	}

	wantErr(t, "", []string{"topic", "alter-config", "-b", addr, "missing", "--set", "retention.ms=1"},
		"altering configs of topic missing", "UNKNOWN_TOPIC_OR_PARTITION")
}

func TestTopicAlterConfigInvalidConfig(t *testing.T) {
	c, addr := startFakeCluster(t, 1, "t")
	// The fake accepts any topic config, so answer the next
	// IncrementalAlterConfigs the way a broker refusing a value does.
	c.ControlKey(int16(kmsg.IncrementalAlterConfigs), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		req := kr.(*kmsg.IncrementalAlterConfigsRequest)
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range req.Resources {
			r := kmsg.NewIncrementalAlterConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			r.ErrorCode = kerr.InvalidConfig.Code
			r.ErrorMessage = kmsg.StringPtr("Invalid value -5 for configuration retention.ms")
			resp.Resources = append(resp.Resources, r)
		}
		return resp, nil, true
	})
	r := wantErr(t, "", []string{"topic", "alter-config", "-b", addr, "t", "--set", "retention.ms=-5"})
	want := "altering configs of topic t: INVALID_CONFIG: Configuration is invalid. (broker says: Invalid value -5 for configuration retention.ms)"
	if r.err.Error() != want {
		t.Errorf("got error %q, want %q", r.err, want)
	}
	if r.out != "" {
		t.Errorf("printed %q on failure", r.out)
	}
}

func TestTopicBadInput(t *testing.T) {
	// None of these reach a broker: they fail while checking flags.
	const addr = "127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create", "-b", addr, "t", "-c", "novalue"}, `invalid config "novalue": want key=value`},
		{[]string{"topic", "create", "-b", addr, "t", "-c", "=v"}, "want key=value"},
		{[]string{"topic", "create", "-b", addr, "t", "-c", "a=1", "-c", "a=2"}, `config "a" given more than once`},
		{[]string{"topic", "create", "-b", addr, "t", "-p", "0"}, "--partitions must be positive or -1"},
		{[]string{"topic", "create", "-b", addr, "t", "-r", "-2"}, "--replicas must be positive or -1"},
		{[]string{"topic", "create", "-b", addr, "t", "t"}, `topic "t" given more than once`},
		{[]string{"topic", "create", "-b", addr}, "requires at least 1 arg"},
		{[]string{"topic", "create", "-b", addr, "t", "-p", "x"}, "invalid argument"},
		{[]string{"topic", "delete", "-b", addr}, "requires at least 1 arg"},
		{[]string{"topic", "describe", "-b", addr}, "requires at least 1 arg"},
		{[]string{"topic", "alter-config", "-b", addr, "t"}, "nothing to alter"},
		{[]string{"topic", "alter-config", "-b", addr, "t", "--set", "bad"}, `invalid config "bad"`},
		{[]string{"topic", "alter-config", "-b", addr, "t", "--delete", "a=b"}, "want a config name"},
		{[]string{"topic", "alter-config", "-b", addr, "t", "--set", "a=1", "--delete", "a"}, `config "a" given more than once`},
		{[]string{"topic", "list", "-b", addr, "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"topic", "list", "-b", " , "}, "no brokers given"},
	} {
		wantErr(t, "", tc.args, tc.want)
	}
}

func TestTopicUnreachableBroker(t *testing.T) {
	// Nothing listens on port 1: the admin call gives up after --timeout.
	wantErr(t, "", []string{"topic", "list", "-b", "127.0.0.1:1", "--timeout", "300ms"}, "listing topics", "127.0.0.1:1")
}

func TestBuildAlterConfigs(t *testing.T) {
	got, err := buildAlterConfigs([]string{"a=1", "b="}, []string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 ||
		got[0].Op != kadm.SetConfig || got[0].Name != "a" || *got[0].Value != "1" ||
		got[1].Op != kadm.SetConfig || got[1].Name != "b" || *got[1].Value != "" ||
		got[2].Op != kadm.DeleteConfig || got[2].Name != "c" || got[2].Value != nil {
		t.Errorf("got %+v", got)
	}
}
