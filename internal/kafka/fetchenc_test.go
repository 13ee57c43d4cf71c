package kafka

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/cairn-io/cairn/internal/partition"
)

// A file whose ranges stand in for stored batches.
func sliceFile(t testing.TB, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "segment"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// Our encoding of every FetchResponse version served, with its file ranges read in, is
// byte for byte what kmsg encodes for the same response holding the bytes.
func TestFetchEncoderMatchesKmsg(t *testing.T) {
	f, data := sliceFile(t, 1<<16)
	rapid.Check(t, func(rt *rapid.T) {
		version := int16(rapid.IntRange(4, 12).Draw(rt, "version"))
		want := kmsg.NewPtrFetchResponse()
		want.Version = version
		want.ThrottleMillis = rapid.Int32().Draw(rt, "throttle")
		want.ErrorCode = rapid.Int16().Draw(rt, "error")
		want.SessionID = rapid.Int32().Draw(rt, "session")
		ours := &fetchResponse{FetchResponse: kmsg.NewPtrFetchResponse()}
		for range rapid.IntRange(0, 3).Draw(rt, "topics") {
			t := kmsg.NewFetchResponseTopic()
			// Names across the one-byte varint length boundary of the compact form.
			t.Topic = strings.Repeat("t", rapid.SampledFrom([]int{0, 1, 126, 127, 128, 300}).Draw(rt, "topicLen"))
			ot := kmsg.NewFetchResponseTopic()
			ot.Topic = t.Topic
			var files []partition.FileRecords
			for range rapid.IntRange(0, 4).Draw(rt, "partitions") {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition = rapid.Int32().Draw(rt, "partition")
				p.ErrorCode = rapid.Int16().Draw(rt, "perror")
				p.HighWatermark = rapid.Int64().Draw(rt, "hw")
				p.LastStableOffset = rapid.Int64().Draw(rt, "lso")
				p.LogStartOffset = rapid.Int64().Draw(rt, "logStart")
				p.PreferredReadReplica = rapid.Int32().Draw(rt, "replica")
				if rapid.Bool().Draw(rt, "diverging") {
					p.DivergingEpoch.Epoch = rapid.Int32().Draw(rt, "divEpoch")
					p.DivergingEpoch.EndOffset = rapid.Int64().Draw(rt, "divEnd")
				}
				if rapid.Bool().Draw(rt, "leader") {
					p.CurrentLeader.LeaderID = rapid.Int32().Draw(rt, "leaderID")
					p.CurrentLeader.LeaderEpoch = rapid.Int32().Draw(rt, "leaderEpoch")
				}
				if rapid.Bool().Draw(rt, "snapshot") {
					p.SnapshotID.EndOffset = rapid.Int64().Draw(rt, "snapEnd")
					p.SnapshotID.Epoch = rapid.Int32().Draw(rt, "snapEpoch")
				}
				switch rapid.IntRange(0, 2).Draw(rt, "aborted") {
				case 1:
					p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				case 2:
					for range rapid.IntRange(1, 3).Draw(rt, "abortedN") {
						a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
						a.ProducerID, a.FirstOffset = rapid.Int64().Draw(rt, "pid"), rapid.Int64().Draw(rt, "first")
						p.AbortedTransactions = append(p.AbortedTransactions, a)
					}
				}
				var ranges []partition.FileRange
				op := p
				switch rapid.IntRange(0, 3).Draw(rt, "records") {
				case 0:
					p.RecordBatches, op.RecordBatches = nil, nil
				case 1:
					p.RecordBatches, op.RecordBatches = []byte{}, []byte{}
				case 2:
					n := rapid.SampledFrom([]int{1, 126, 127, 128, 1000}).Draw(rt, "bytes")
					p.RecordBatches = data[:n]
					op.RecordBatches = data[:n]
				case 3:
					// File ranges; ours holds no bytes, as fetchOnce builds it.
					p.RecordBatches, op.RecordBatches = nil, []byte{}
					for range rapid.IntRange(1, 3).Draw(rt, "slices") {
						pos := rapid.Int64Range(0, int64(len(data))-1).Draw(rt, "pos")
						n := rapid.Int64Range(1, int64(len(data))-pos).Draw(rt, "len")
						ranges = append(ranges, partition.FileRange{File: f, Pos: pos, Len: n})
						p.RecordBatches = append(p.RecordBatches, data[pos:pos+n]...)
					}
				}
				t.Partitions = append(t.Partitions, p)
				ot.Partitions = append(ot.Partitions, op)
				files = append(files, partition.FileRecordsOf(ranges))
			}
			want.Topics = append(want.Topics, t)
			ours.Topics = append(ours.Topics, ot)
			ours.files = append(ours.files, files)
		}
		ours.Version = want.Version
		ours.ThrottleMillis, ours.ErrorCode, ours.SessionID = want.ThrottleMillis, want.ErrorCode, want.SessionID
		got := ours.AppendTo(nil)
		if exp := want.AppendTo(nil); !bytes.Equal(got, exp) {
			rt.Fatalf("v%d: our encoding (%d bytes) differs from kmsg's (%d bytes)", version, len(got), len(exp))
		}
		// The parts carry the same bytes.
		body, cuts := ours.appendParts(nil, nil)
		if len(body)+filesLen(cuts) != len(got) {
			rt.Fatalf("parts hold %d bytes, the encoding %d", len(body)+filesLen(cuts), len(got))
		}
	})
}

// writeParts sends bytes and file ranges in order, whether the ranges go by sendfile
// (TCP) or are copied (net.Pipe offers no descriptor), small ones or large.
func TestWritePartsSendsFileRanges(t *testing.T) {
	f, data := sliceFile(t, 1<<20)
	buf := []byte("head-middle-tail")
	cuts := []fileCut{
		{at: 4, FileRange: partition.FileRange{File: f, Pos: 10, Len: 100}},
		{at: 4, FileRange: partition.FileRange{File: f, Pos: 5000, Len: 300 << 10}},
		{at: 12, FileRange: partition.FileRange{File: f, Pos: 0, Len: 1 << 20}},
	}
	want := append([]byte(nil), "head"...)
	want = append(want, data[10:110]...)
	want = append(want, data[5000:5000+300<<10]...)
	want = append(want, "-middle-"...)
	want = append(want, data...)
	want = append(want, "tail"...)

	for _, tc := range []struct {
		name     string
		conns    func(t *testing.T) (net.Conn, net.Conn)
		minBytes int64
	}{
		{"tcp", tcpPair, sendfileMinBytes},
		{"tcp-all-sendfile", tcpPair, 0},
		{"pipe", func(*testing.T) (net.Conn, net.Conn) { return net.Pipe() }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(v int64) { sendfileMinBytes = v }(sendfileMinBytes)
			sendfileMinBytes = tc.minBytes
			a, b := tc.conns(t)
			defer a.Close()
			defer b.Close()
			got := make(chan []byte, 1)
			go func() {
				all, _ := io.ReadAll(b)
				got <- all
			}()
			w := bufio.NewWriterSize(a, 64<<10)
			if err := writeParts(w, a, buf, cuts); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			a.Close()
			if g := <-got; !bytes.Equal(g, want) {
				t.Fatalf("received %d bytes, want %d (equal prefix %d)", len(g), len(want), commonPrefix(g, want))
			}
		})
	}
}

// A range its file no longer holds (the segment was truncated after the read) cannot be
// sent: writeParts reports errFileShrunk, on both paths.
func TestWritePartsShrunkFile(t *testing.T) {
	f, _ := sliceFile(t, 64<<10)
	cuts := []fileCut{{at: 0, FileRange: partition.FileRange{File: f, Pos: 32 << 10, Len: 64 << 10}}}
	for _, minBytes := range []int64{0, 1 << 30} {
		defer func(v int64) { sendfileMinBytes = v }(sendfileMinBytes)
		sendfileMinBytes = minBytes
		a, b := tcpPair(t)
		go io.Copy(io.Discard, b)
		w := bufio.NewWriter(a)
		if err := writeParts(w, a, nil, cuts); !errors.Is(err, errFileShrunk) {
			t.Fatalf("min %d: %v, want errFileShrunk", minBytes, err)
		}
		a.Close()
		b.Close()
	}
}

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	if b == nil {
		t.Fatal("accept failed")
	}
	return a, b
}

func commonPrefix(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// A consumer reads batches large and small, sent from the segment files, and the
// duplicated descriptors are let go after each response, including the long-poll
// answers read again rather than sent.
func TestConsumeFromSegmentFiles(t *testing.T) {
	for _, minBytes := range []int64{sendfileMinBytes, 0} {
		t.Run(fmt.Sprint("sendfile-from-", minBytes), func(t *testing.T) {
			defer func(v int64) { sendfileMinBytes = v }(sendfileMinBytes)
			sendfileMinBytes = minBytes
			addr, _ := startBroker(t)
			createTopic(t, addr, "files", 3, 0)
			pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("files"), kgo.ProducerLinger(0))
			if err != nil {
				t.Fatal(err)
			}
			defer pcl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			want := map[string]int{}
			for i := range 60 {
				// Values from 10 bytes to 200 KiB: batches on both sides of the threshold.
				v := strings.Repeat(fmt.Sprint(i%10), 10<<(i%15))
				want[v]++
				if err := pcl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 3), Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			// An *os.File left unreleased is closed by its finalizer eventually; with the
			// collector off, a leak shows.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			before := openFDs(t)
			ccl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("files"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(300<<10), kgo.FetchMaxPartitionBytes(100<<10),
				kgo.FetchMinBytes(1<<30), kgo.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for n < 60 {
				fs := ccl.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumed %d of 60: %v", n, err)
				}
				fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
				fs.EachRecord(func(r *kgo.Record) {
					want[string(r.Value)]--
					n++
				})
			}
			for v, c := range want {
				if c != 0 {
					t.Fatalf("value of %d bytes: %d unaccounted", len(v), c)
				}
			}
			// Long polls that find nothing new (min bytes never reached) read again and drop
			// their answers; then the client goes away.
			time.Sleep(600 * time.Millisecond)
			ccl.Close()
			deadline := time.Now().Add(5 * time.Second)
			for openFDs(t) > before+2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if after := openFDs(t); after > before+2 {
				t.Fatalf("%d descriptors open after consuming, %d before", after, before)
			}
		})
	}
}
