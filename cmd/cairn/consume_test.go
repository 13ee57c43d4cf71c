package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseFormatAndRender(t *testing.T) {
	ts := time.UnixMilli(1700000000123)
	rec := &kgo.Record{
		Topic: "top", Partition: 3, Offset: 42, Key: []byte("key"), Value: []byte("val"), Timestamp: ts,
		Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: []byte("")}},
	}
	for _, tc := range []struct{ format, want string }{
		{`%v\n`, "val\n"},
		{`%t %p %o %k %v %T %h`, "top 3 42 key val 1700000000123 h1=x,h2="},
		{`%k\t%v\r\n`, "key\tval\r\n"},
		{`100%% \\ %v`, `100% \ val`},
		{`plain`, "plain"},
		{``, ""},
		{`%v%v`, "valval"},
	} {
		f, err := parseFormat(tc.format)
		if err != nil {
			t.Errorf("parseFormat(%q): %v", tc.format, err)
			continue
		}
		if got := string(f.render(nil, rec)); got != tc.want {
			t.Errorf("format %q: got %q, want %q", tc.format, got, tc.want)
		}
	}

	// A record without key, headers or timestamp.
	f, _ := parseFormat(`[%k][%h][%T]`)
	if got := string(f.render(nil, &kgo.Record{})); got != "[][][-1]" {
		t.Errorf("empty record: got %q", got)
	}

	for _, tc := range []struct{ format, want string }{
		{`%x`, "unknown verb %x"},
		{`abc%`, "dangling %"},
		{`%v\q`, `unknown escape \q`},
		{`%v\`, `dangling \`},
		{`%K`, "unknown verb %K"},
	} {
		_, err := parseFormat(tc.format)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFormat(%q) = %v, want an error containing %q", tc.format, err, tc.want)
		}
	}
}

func TestParseOffset(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want kgo.Offset
	}{
		{"beginning", kgo.NewOffset().AtStart()},
		{"start", kgo.NewOffset().AtStart()},
		{"END", kgo.NewOffset().AtEnd()},
		{"0", kgo.NewOffset().At(0)},
		{"17", kgo.NewOffset().At(17)},
		{"-5", kgo.NewOffset().AtEnd().Relative(-5)},
	} {
		got, err := parseOffset(tc.in)
		if err != nil || got.String() != tc.want.String() {
			t.Errorf("parseOffset(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "middle", "1.5", "0x10", "99999999999999999999"} {
		if _, err := parseOffset(bad); err == nil {
			t.Errorf("parseOffset(%q): want an error", bad)
		}
	}
}

// produceLines writes lines to partition p of topic through the CLI.
func produceLines(t *testing.T, addr, topic string, p int, lines ...string) {
	t.Helper()
	mustRun(t, strings.Join(lines, "\n")+"\n", "produce", "-b", addr, topic, "--partition", fmt.Sprint(p))
}

func TestConsumeOffsetsAndPartitions(t *testing.T) {
	addr := newFakeCluster(t, 2, "t")
	produceLines(t, addr, "t", 0, "a0", "a1", "a2", "a3")
	produceLines(t, addr, "t", 1, "b0", "b1")

	// All partitions from the beginning; order across partitions is free.
	out := mustRun(t, "", "consume", "-b", addr, "t", "-n", "6")
	got := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(got)
	if fmt.Sprint(got) != "[a0 a1 a2 a3 b0 b1]" {
		t.Errorf("consume all: %q", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "0", "-o", "2", "-n", "2"}, "a2\na3\n"},
		{[]string{"-p", "0", "-o", "beginning", "-n", "1"}, "a0\n"},
		{[]string{"-p", "1", "--offset", "-1", "-n", "1"}, "b1\n"},
		{[]string{"-p", "0", "-o", "-2", "-n", "5", "--timeout", "500ms"}, "a2\na3\n"},
		// Past the end is clamped to the end: nothing to read.
		{[]string{"-p", "0", "-o", "100", "--timeout", "500ms"}, ""},
		{[]string{"-p", "1", "-o", "end", "--timeout", "500ms"}, ""},
		{[]string{"-p", "1", "-f", `%t/%p/%o:%v;`, "-n", "2"}, "t/1/0:b0;t/1/1:b1;"},
	} {
		args := append([]string{"consume", "-b", addr, "t"}, tc.args...)
		if out := mustRun(t, "", args...); out != tc.want {
			t.Errorf("consume %v: got %q, want %q", tc.args, out, tc.want)
		}
	}
}

func TestConsumeIdleTimeoutAndNum(t *testing.T) {
	addr := newFakeCluster(t, 1, "t")
	produceLines(t, addr, "t", 0, "1", "2", "3")

	start := time.Now()
	out := mustRun(t, "", "consume", "-b", addr, "t", "--timeout", "300ms")
	if out != "1\n2\n3\n" {
		t.Errorf("got %q", out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("idle timeout took %v", d)
	}
	// -n stops even though more records are available.
	if out := mustRun(t, "", "consume", "-b", addr, "t", "-n", "2"); out != "1\n2\n" {
		t.Errorf("-n 2 got %q", out)
	}
}

func TestConsumeStopsOnCancel(t *testing.T) {
	addr := newFakeCluster(t, 1, "t")
	produceLines(t, addr, "t", 0, "x")

	// Without -n or --timeout the command runs until interrupted; a
	// cancelled context stands in for ^C and must end it cleanly.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() { done <- runCLIContext(ctx, t, "", "consume", "-b", addr, "t") }()
	time.Sleep(1500 * time.Millisecond)
	cancel()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("consume after cancel: %v", r.err)
		}
		if r.out != "x\n" {
			t.Errorf("got %q", r.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consume did not stop after cancel")
	}
}

func TestConsumeErrors(t *testing.T) {
	addr := newFakeCluster(t, 2, "t")
	wantErr(t, "", []string{"consume", "-b", addr, "missing"}, "topic missing", "UNKNOWN_TOPIC_OR_PARTITION")
	wantErr(t, "", []string{"consume", "-b", addr, "t", "-p", "5"}, "topic t has no partition 5 (it has 2)")

	const nowhere = "127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "middle"}, `invalid --offset "middle"`},
		{[]string{"--offset", "1.5"}, `invalid --offset "1.5"`},
		{[]string{"-f", `%q`}, "unknown verb %q"},
		{[]string{"-f", `%v\x`}, `unknown escape \x`},
		{[]string{"-p", "-2"}, "invalid --partition -2"},
		{[]string{"-n", "-1"}, "invalid --num -1"},
		{[]string{"--timeout", "-1s"}, "invalid --timeout"},
		{[]string{"-n", "x"}, "invalid argument"},
	} {
		args := append([]string{"consume", "-b", nowhere, "t"}, tc.args...)
		wantErr(t, "", args, tc.want)
	}
	wantErr(t, "", []string{"consume", "-b", nowhere}, "accepts 1 arg")
}
