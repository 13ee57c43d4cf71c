package kafka

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func serve(t *testing.T) (*Server, string) {
	t.Helper()
	s := newTestServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(s.Close)
	return s, ln.Addr().String()
}

func writeFrame(t *testing.T, c net.Conn, req kmsg.Request, version int16, corr int32) {
	t.Helper()
	body := frame(req, version)
	binary.BigEndian.PutUint32(body[4:], uint32(corr))
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := c.Write(append(out, body...)); err != nil {
		t.Fatal(err)
	}
}

// A finished response must not wait in the write buffer behind a long-poll after it.
func TestReadyResponseIsNotHeldBehindLongPoll(t *testing.T) {
	s, addr := serve(t)
	if _, err := s.b.CreateTopic("lp", 1, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 5000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "lp"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	start := time.Now()
	writeFrame(t, c, kmsg.NewPtrApiVersionsRequest(), 3, 1)
	writeFrame(t, c, fetch, 12, 2)
	r := bufio.NewReader(c)
	var hdr [8]byte
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatal(err)
	}
	if corr := binary.BigEndian.Uint32(hdr[4:]); corr != 1 {
		t.Fatalf("first response has correlation id %d", corr)
	}
	// Against the fetch's 5 s wait: the ApiVersions answer must not have waited for it.
	if waited := time.Since(start); waited > 2500*time.Millisecond {
		t.Fatalf("ApiVersions answer took %v, held behind the long-poll", waited)
	}
}

func TestCloseEndsParkedWaitsOnBrokenConnections(t *testing.T) {
	s, addr := serve(t)
	s.b.CreateTopic("lp", 1, 1, nil, false)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 20000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "lp"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	writeFrame(t, c, fetch, 12, 1)
	// A size prefix with no body: the reader ends mid-frame while the fetch is parked.
	c.Write([]byte{0, 0, 0, 100})
	start := time.Now()
	s.Close()
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Close waited %v for a parked 20 s fetch", took)
	}
	s.Close() // a second Close is harmless
}

// trickleReader hands out at most step bytes per Read, as a socket does.
type trickleReader struct {
	data   []byte
	step   int
	onRead func() // if set, called at every Read
}

func (r *trickleReader) Read(p []byte) (int, error) {
	if r.onRead != nil {
		r.onRead()
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// Both ways of reading a frame (allocated whole against the server-wide reserve, or grown
// as bytes arrive when the reserve is spent) read exactly the announced bytes, fail on a
// short frame, and leave the reserve as they found it.
func TestReadFrameReadsExactlyTheAnnouncedBytes(t *testing.T) {
	for _, held := range []int64{0, maxUnfilledFrameBytes - 1<<20} {
		for _, size := range []int{8, 1 << 20, 1<<20 + 1, 5 << 20, 17<<20 + 3} {
			reserve := &frameReserve{}
			reserve.used.Store(held)
			data := make([]byte, size+10) // the next frame's bytes follow
			for i := range data {
				data[i] = byte(i * 7)
			}
			r := &trickleReader{data: data, step: 64 << 10}
			var peak int64 // the reserve's largest value seen while the frame is read
			r.onRead = func() { peak = max(peak, reserve.used.Load()) }
			got, err := readFrame(r, size, reserve)
			if err != nil || len(got) != size || string(got) != string(data[:size]) {
				t.Fatalf("held %d, size %d: got %d bytes, %v", held, size, len(got), err)
			}
			want := held // a frame up to 1 MiB, or one that does not fit, takes nothing
			if size > 1<<20 && held+int64(size) <= maxUnfilledFrameBytes {
				want = held + int64(size)
			}
			if peak != want {
				t.Fatalf("held %d, size %d: reserve at %d during the read, want %d", held, size, peak, want)
			}
			if len(r.data) != 10 {
				t.Fatalf("held %d, size %d: read %d bytes past the frame", held, size, 10-len(r.data))
			}
			if _, err := readFrame(&trickleReader{data: data[:size-1], step: 1 << 20}, size, reserve); err == nil {
				t.Fatalf("held %d, size %d: a frame one byte short read without an error", held, size)
			}
			if u := reserve.used.Load(); u != held {
				t.Fatalf("held %d, size %d: reserve at %d after the reads", held, size, u)
			}
		}
	}
}

// The reserve admits frames up to its bound and refuses the one past it.
func TestFrameReserveBound(t *testing.T) {
	var f frameReserve
	if !f.take(maxUnfilledFrameBytes-10) || !f.take(10) {
		t.Fatal("refused a take within the bound")
	}
	if f.take(1) {
		t.Fatal("took a byte past the bound")
	}
	f.give(10)
	if !f.take(10) {
		t.Fatal("refused a take after a give")
	}
}
