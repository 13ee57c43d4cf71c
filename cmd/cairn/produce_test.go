package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestSplitKey(t *testing.T) {
	for _, tc := range []struct {
		line, sep  string
		key, value string
		noKey      bool
	}{
		{"k:v", ":", "k", "v", false},
		{"k:v:w", ":", "k", "v:w", false},
		{":v", ":", "", "v", false},
		{"k:", ":", "k", "", false},
		{"novalue", ":", "", "novalue", true},
		{"a::b", "::", "a", "b", false},
		{"k:v", "", "", "k:v", true},
	} {
		k, v := splitKey([]byte(tc.line), tc.sep)
		if string(v) != tc.value || string(k) != tc.key || (k == nil) != tc.noKey {
			t.Errorf("splitKey(%q, %q) = %q (nil %v), %q", tc.line, tc.sep, k, k == nil, v)
		}
	}
}

func TestReadLines(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	var got []string
	for l := range readLines(strings.NewReader("a\r\n\nb\nlast"), done) {
		if l.err != nil {
			t.Fatal(l.err)
		}
		got = append(got, string(l.data))
	}
	if want := []string{"a", "", "b", "last"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// A long line is one record, not split.
	long := strings.Repeat("x", 300<<10)
	n := 0
	for l := range readLines(strings.NewReader(long+"\n"), done) {
		n++
		if len(l.data) != len(long) {
			t.Errorf("long line: got %d bytes", len(l.data))
		}
	}
	if n != 1 {
		t.Errorf("long line: got %d lines", n)
	}
}

func TestProduceAndConsumeRoundTrip(t *testing.T) {
	addr := newFakeCluster(t, 3, "t")

	// Silent on success.
	out := mustRun(t, "k1=v1\nk2=v=2\nnokey\n", "produce", "-b", addr, "t", "-k", "=", "--partition", "1")
	if out != "" {
		t.Errorf("produce printed %q without -v", out)
	}
	out = mustRun(t, "", "consume", "-b", addr, "t", "-n", "3", "-f", `%p|%o|%k|%v\n`)
	if want := "1|0|k1|v1\n1|1|k2|v=2\n1|2||nokey\n"; out != want {
		t.Errorf("consume got %q, want %q", out, want)
	}
}

func TestProduceVerbose(t *testing.T) {
	addr := newFakeCluster(t, 2, "t")
	out := mustRun(t, "a\nb\nc\n", "produce", "-b", addr, "t", "--partition", "0", "-v")
	if out != "0@0\n0@1\n0@2\n" {
		t.Errorf("produce -v got %q", out)
	}
	// The client partitioner spreads keyless records; each is reported.
	out = mustRun(t, "x\ny\n", "produce", "-b", addr, "t", "-v")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("produce -v got %q", out)
	}
	for _, l := range lines {
		var p, o int
		if _, err := fmt.Sscanf(l, "%d@%d", &p, &o); err != nil || p < 0 || p > 1 || o < 0 {
			t.Errorf("bad partition@offset line %q", l)
		}
	}
}

func TestProduceAcksAndCompression(t *testing.T) {
	addr := newFakeCluster(t, 1, "t")
	n := 0
	for _, acks := range []string{"all", "1", "0"} {
		for _, comp := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			val := acks + "-" + comp
			out := mustRun(t, val+"\n", "produce", "-b", addr, "t", "--acks", acks, "--compression", comp, "-v")
			want := fmt.Sprintf("0@%d\n", n)
			if acks == "0" {
				want = "0@?\n" // the broker does not answer, so no offset
			}
			if out != want {
				t.Errorf("acks=%s compression=%s: got %q, want %q", acks, comp, out, want)
			}
			n++
		}
	}
	out := mustRun(t, "", "consume", "-b", addr, "t", "-n", fmt.Sprint(n))
	if got := strings.Count(out, "\n"); got != n {
		t.Fatalf("consumed %d records, want %d:\n%s", got, n, out)
	}
	for _, acks := range []string{"all", "1", "0"} {
		for _, comp := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			if !strings.Contains(out, acks+"-"+comp+"\n") {
				t.Errorf("record %s-%s not consumed", acks, comp)
			}
		}
	}
}

func TestProduceFailures(t *testing.T) {
	addr := newFakeCluster(t, 2, "t")
	// A partition the topic does not have: every record fails, exit non-zero.
	wantErr(t, "a\nb\n", []string{"produce", "-b", addr, "t", "--partition", "7"}, "2 of 2 records failed", "line 1")
	// A topic that does not exist (the fake does not auto-create).
	wantErr(t, "a\n", []string{"produce", "-b", addr, "missing", "--timeout", "3s"}, "1 of 1 records failed")
	// Empty input is fine and produces nothing.
	if out := mustRun(t, "", "produce", "-b", addr, "t", "-v"); out != "" {
		t.Errorf("empty input printed %q", out)
	}
}

func TestProduceBadFlags(t *testing.T) {
	const addr = "127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "-b", addr, "t", "--acks", "2"}, `invalid --acks "2"`},
		{[]string{"produce", "-b", addr, "t", "--compression", "brotli"}, `invalid --compression "brotli"`},
		{[]string{"produce", "-b", addr, "t", "--partition", "-3"}, "invalid --partition -3"},
		{[]string{"produce", "-b", addr, "t", "-k", ""}, "--key-separator must not be empty"},
		{[]string{"produce", "-b", addr, "t", "--timeout", "-1s"}, "invalid --timeout"},
		{[]string{"produce", "-b", addr}, "accepts 1 arg"},
		{[]string{"produce", "-b", addr, "a", "b"}, "accepts 1 arg"},
	} {
		wantErr(t, "x\n", tc.args, tc.want)
	}
}
