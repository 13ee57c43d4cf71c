package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// rawBatch encodes a v2 record batch header for records base..base+n-1
// followed by body as its (opaque) records; the walker never looks inside.
func rawBatch(base int64, n int32, attrs int16, body string) []byte {
	rb := kmsg.RecordBatch{
		FirstOffset:     base,
		Magic:           2,
		Attributes:      attrs,
		LastOffsetDelta: n - 1,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      n,
		Records:         []byte(body),
	}
	b := rb.AppendTo(nil)
	rb.Length = int32(len(b) - 12)
	return rb.AppendTo(nil)
}

func TestWalkBatches(t *testing.T) {
	a := rawBatch(10, 3, 0, "aaaa")
	b := rawBatch(13, 5, 0, "bbbbbbbbbb")
	ctl := rawBatch(18, 1, recordbatch.AttrControl, "m")
	c := rawBatch(19, 2, 0, "cc")
	if len(a) != recordbatch.HeaderSize+4 {
		t.Fatalf("a batch with 4 record bytes is %d bytes, want %d", len(a), recordbatch.HeaderSize+4)
	}
	join := func(bs ...[]byte) []byte {
		var out []byte
		for _, x := range bs {
			out = append(out, x...)
		}
		return out
	}
	all := join(a, b, ctl, c)
	size := func(bs ...[]byte) int64 { return int64(len(join(bs...))) }

	for _, tc := range []struct {
		name string
		in   []byte
		from int64
		want batchWalk
	}{
		{"empty", nil, 10, batchWalk{next: 10}},
		{"whole", all, 10, batchWalk{next: 21, bytes: size(all), records: 10, batches: 4}},
		// A control batch's bytes count, its marker is not a record.
		{"control only", ctl, 18, batchWalk{next: 19, bytes: size(ctl), records: 0, batches: 1}},
		// The broker cut the last batch: it waits for the next fetch.
		{"truncated body", join(a, b, c[:len(c)-1]), 10, batchWalk{next: 18, bytes: size(a, b), records: 8, batches: 2}},
		{"truncated header", join(a, b[:40]), 10, batchWalk{next: 13, bytes: size(a), records: 3, batches: 1}},
		{"truncated length", join(a, b[:10]), 10, batchWalk{next: 13, bytes: size(a), records: 3, batches: 1}},
		{"only a partial batch", b[:len(b)-3], 13, batchWalk{next: 13}},
		// Starting inside a batch counts it whole; batches wholly
		// before the fetch offset are skipped.
		{"from inside", all, 15, batchWalk{next: 21, bytes: size(b, ctl, c), records: 7, batches: 4}},
		{"from past first", all, 13, batchWalk{next: 21, bytes: size(b, ctl, c), records: 7, batches: 4}},
	} {
		got, err := walkBatches(tc.in, tc.from)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}

	old := append([]byte(nil), a...)
	old[recordbatch.MagicPos] = 1
	if w, err := walkBatches(join(a, old), 10); err == nil || !strings.Contains(err.Error(), "magic 1") || w.next != 13 || w.records != 3 {
		t.Errorf("v1 batch after a v2 one: %+v, %v; want the v2 one counted and a magic error", w, err)
	}
	short := append([]byte(nil), a...)
	short[11] = 20 // a length that cannot hold a header
	if _, err := walkBatches(short, 10); err == nil || !strings.Contains(err.Error(), "shorter than a v2 header") {
		t.Errorf("impossible length: %v", err)
	}
	if _, err := walkBatches(rawBatch(10, 0, 0, "x"), 10); err == nil || !strings.Contains(err.Error(), "lastOffsetDelta -1") {
		t.Errorf("a batch claiming no records: %v", err)
	}
}

func TestBenchRawFlags(t *testing.T) {
	for _, tc := range []struct {
		raw   bool
		group string
		max   byteSize
		want  string
	}{
		{false, "g", 0, ""}, // --partition-max-bytes only matters with --raw
		{true, "", 8 << 20, ""},
		{true, "g", 8 << 20, "--raw cannot be used with --group"},
		{true, "", 0, "invalid --partition-max-bytes 0"},
		{true, "", 2 << 30, "invalid --partition-max-bytes"},
	} {
		rf := benchRawFlags{raw: tc.raw, partMaxBytes: tc.max}
		err := rf.validate(&benchConsumeFlags{consumers: 1, group: tc.group})
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("raw %v group %q max %d: got %v, want %q", tc.raw, tc.group, tc.max, err, tc.want)
		}
	}
	var rf benchRawFlags
	cmd := &cobra.Command{}
	rf.register(cmd.Flags())
	if rf.raw || rf.partMaxBytes != 8<<20 {
		t.Errorf("defaults: raw %v, partition max %d", rf.raw, rf.partMaxBytes)
	}
	// The command refuses before it dials anything.
	const addr = "127.0.0.1:1"
	for args, want := range map[string]string{
		"--raw --group g":                "--raw cannot be used with --group",
		"--raw -g g":                     "--raw cannot be used with --group",
		"--raw --partition-max-bytes 0":  "invalid --partition-max-bytes 0",
		"--raw --partition-max-bytes -1": "invalid --partition-max-bytes -1",
	} {
		r := runBench(t, append([]string{"consume", "-b", addr}, strings.Fields(args)...)...)
		if r.err == nil || !strings.Contains(r.err.Error(), want) {
			t.Errorf("consume %s: got %v, want an error containing %q", args, r.err, want)
		}
	}
}

func TestBenchConsumeRawReadsEverything(t *testing.T) {
	addr := newFakeCluster(t, 3, "raw")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("raw"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Several produce calls so that every partition holds several batches.
	const rounds, perRound = 20, 50
	for range rounds {
		rs := make([]*kgo.Record, perRound)
		for i := range rs {
			rs[i] = &kgo.Record{Value: []byte(strings.Repeat("v", 100))}
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "raw")
	if err != nil {
		t.Fatal(err)
	}
	var produced int64
	ends.Each(func(o kadm.ListedOffset) { produced += o.Offset })
	if produced != rounds*perRound {
		t.Fatalf("the topic holds %d records, want %d", produced, rounds*perRound)
	}

	for _, consumers := range []string{"1", "2"} {
		// A small partition limit makes the broker cut batches, which the
		// next fetch must pick up.
		m := benchJSON(t, "consume", "-b", addr, "--topic", "raw", "--raw", "--consumers", consumers,
			"--partition-max-bytes", "1KiB", "--duration", "60s")
		wantNumbers(t, m, []string{"records_per_s", "mb_per_s", "records", "bytes"}, "errors")
		if m["records"] != float64(produced) || m["interrupted"] != false || m["errors"] != 0.0 {
			t.Errorf("--raw with %s consumers: %v; want %d records, no errors", consumers, m, produced)
		}
		// Uncompressed batch bytes include their headers, so exceed the values.
		if b := m["bytes"].(float64); b <= float64(produced*100) {
			t.Errorf("--raw read %v bytes for %d records of 100 bytes", b, produced)
		}
		if p, _ := m["parameters"].(map[string]any); p["raw"] != true || p["partition_max_bytes"] != 1024.0 {
			t.Errorf("parameters: %v", p)
		}
	}
}

// FuzzWalkBatches feeds the raw consumer's batch walker arbitrary fetch bytes: it must never
// panic, never count more bytes than it was given or batches that cannot fit, never go
// backwards from the fetch offset, and never count a negative number of records.
func FuzzWalkBatches(f *testing.F) {
	a, b := rawBatch(10, 3, 0, "aaaa"), rawBatch(13, 5, 0, "bbbbbbbbbb")
	ctl := rawBatch(18, 1, recordbatch.AttrControl, "m")
	all := append(append(append([]byte(nil), a...), b...), ctl...)
	f.Add(all, int64(10))
	f.Add(all, int64(15))
	f.Add(all[:len(all)-5], int64(0))
	f.Add(all[:40], int64(10))
	f.Add([]byte{}, int64(-1))
	f.Fuzz(func(t *testing.T, in []byte, from int64) {
		w, err := walkBatches(in, from)
		if w.bytes < 0 || w.bytes > int64(len(in)) || int64(w.batches)*recordbatch.HeaderSize > int64(len(in)) {
			t.Fatalf("walk of %d bytes counted %d bytes in %d batches", len(in), w.bytes, w.batches)
		}
		if w.next < from || w.records < 0 {
			t.Fatalf("walk from %d: next %d, %d records (err %v)", from, w.next, w.records, err)
		}
	})
}
