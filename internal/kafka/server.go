// Package kafka owns the Kafka wire protocol: framing, request headers, version negotiation,
// per-connection pipelining with in-order responses, and the translation of each API into
// calls on the broker and its partitions (one file per API family). It must not hold
// partition state or decide durability: it asks internal/broker and internal/partition and
// reports what they answer.
//
// It reaches partitions through the broker, by topic and partition. Produce and Fetch,
// the data path, go through Broker.Produce and Broker.Fetch (with Broker.WatchPartition
// for Fetch's long poll), which route to the local replica (a produce to a follower is
// forwarded to the leader); the offset APIs (ListOffsets, OffsetForLeaderEpoch,
// DeleteRecords) answer on the replica Broker.Partition finds here. Requests and results
// are internal/partition's types; it never names a storage type: fetched records that
// stay in the segment files travel as partition.FileRecords, which the response writer
// sends with sendfile. A Fetch's or ListOffsets' IsolationLevel is handed to the partition
// (read_committed reads up to the last stable offset; see fetch.go), which also finds the
// aborted transactions a read_committed answer carries.
//
// It imports internal/group, beside partition below the broker, for the group APIs'
// request and result types and the name of the offsets topic (which Produce refuses to
// write). The coordinator it calls is the one Broker.Groups hands out.
package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
)

// Limits that keep per-connection memory bounded.
const (
	// MaxFrameBytes is the largest request accepted (Kafka's socket.request.max.bytes default);
	// a longer frame closes the connection before its body is read.
	MaxFrameBytes = 100 << 20
	// maxInFlight is how many requests of one connection may be parsed ahead of their
	// responses; past it the connection stops reading, which pushes back on the client.
	maxInFlight = 32
	// maxInFlightBytes bounds the request bytes one connection holds while their responses
	// are pending. A single frame larger than this is still read, but only once nothing
	// else of the connection is in flight.
	maxInFlightBytes = 64 << 20
	// maxUnfilledFrameBytes bounds, for the whole server, the frames allocated at their
	// announced size before their bytes arrived (see readFrame).
	maxUnfilledFrameBytes = 64 << 20
)

// frameReserve is a server-wide, non-blocking count of bytes allocated for frames still
// being received. A frame that fits is allocated whole at once; one that does not grows
// as its bytes arrive.
type frameReserve struct{ used atomic.Int64 }

func (f *frameReserve) take(n int) bool {
	for {
		u := f.used.Load()
		if u+int64(n) > maxUnfilledFrameBytes {
			return false
		}
		if f.used.CompareAndSwap(u, u+int64(n)) {
			return true
		}
	}
}

func (f *frameReserve) give(n int) { f.used.Add(-int64(n)) }

// byteBudget is a per-connection counting semaphore over request bytes.
type byteBudget struct {
	mu     sync.Mutex
	cond   *sync.Cond
	used   int
	closed bool
}

func newByteBudget() *byteBudget {
	b := &byteBudget{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes fit (or nothing is held); false once the budget is closed.
func (b *byteBudget) acquire(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.closed && b.used > 0 && b.used+n > maxInFlightBytes {
		b.cond.Wait()
	}
	if b.closed {
		return false
	}
	b.used += n
	return true
}

func (b *byteBudget) release(n int) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *byteBudget) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Metrics receives per-request observations; nil-safe no-op when unset.
type Metrics interface {
	ObserveRequest(apiKey int16, d time.Duration, bytesIn, bytesOut int)
	ConnectionOpened()
	ConnectionClosed()
}

// Server serves the Kafka protocol for one broker.
type Server struct {
	b       *broker.Broker
	lg      *slog.Logger
	metrics Metrics

	unfilled frameReserve
	auth     authState
	tls      tlsCounters
	sasl     saslServer

	// parkedFetches counts long polls waiting for data (Kafka's fetch purgatory size).
	parkedFetches atomic.Int64
	// sessions are the fetch sessions (KIP-227) of this broker's consumers.
	sessions *fetchSessions
	// beforeConfigChange, when set (by tests), runs between reading a resource's overrides
	// and proposing the change built from them: where a change through another broker
	// lands unseen.
	beforeConfigChange func(attempt int)

	mu    sync.Mutex
	lns   []net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	done  chan struct{}
}

// NewServer makes a server for b.
func NewServer(b *broker.Broker, lg *slog.Logger, m Metrics) *Server {
	if lg == nil {
		lg = slog.Default()
	}
	return &Server{b: b, lg: lg, metrics: m, conns: make(map[net.Conn]struct{}), done: make(chan struct{}),
		sessions: newFetchSessions(DefaultFetchSessionSlots)}
}

// Serve accepts connections on ln, as a PLAINTEXT listener, until Close.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, Listener{Name: "PLAINTEXT"})
}

// ServeListener accepts connections on ln until Close, each served as listener l says. A
// server may serve several listeners at once, each from its own goroutine.
func (s *Server) ServeListener(ln net.Listener, l Listener) error {
	s.mu.Lock()
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.mu.Lock()
		select {
		case <-s.done:
			// Accepted as Close ran: Close has already gone through the connections.
			s.mu.Unlock()
			c.Close()
			return nil
		default:
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			if conn, ok := s.startTLS(c, l); ok {
				s.serveConn(conn, l)
			} else {
				c.Close()
			}
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Close stops accepting, closes every connection and waits for their handlers.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	close(s.done)
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// requestHeader is the Kafka request header (v1, or v2 with tagged fields).
type requestHeader struct {
	apiKey        int16
	apiVersion    int16
	correlationID int32
	clientID      string
}

// pending is a response slot; the writer sends slots in request order.
type pending struct {
	hdr     requestHeader
	start   time.Time
	inBytes int
	// respond produces the response, possibly waiting (acks=-1, long-poll fetch); nil
	// means no response is sent (acks=0).
	respond func(ctx context.Context) kmsg.Response
	flex    bool
	close   bool // close the connection after this slot
	raw     bool // a bare SASL token (v0 handshake flow): no response header
}

func (s *Server) serveConn(c net.Conn, l Listener) {
	if s.metrics != nil {
		s.metrics.ConnectionOpened()
		defer s.metrics.ConnectionClosed()
	}
	sess := &session{listener: l, principal: connPrincipal(c)}
	ctx, cancel := context.WithCancel(withSession(withClientHost(context.Background(), c.RemoteAddr()), sess))
	defer cancel()
	defer c.Close()

	slots := make(chan *pending, maxInFlight)
	budget := newByteBudget()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop(ctx, c, slots, budget)
		budget.close()
		cancel()
		c.Close()
	}()
	defer func() {
		// However reading ended (the client went away, a bad frame, shutdown), responses
		// still waiting (a JoinGroup in a long rebalance, a long-poll fetch) have no one
		// to go to: stop their waits before waiting for the writer.
		cancel()
		close(slots)
		<-writerDone
	}()

	r := bufio.NewReaderSize(c, 64<<10)
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if lo, hi := sess.frameBounds(); size < lo || size > hi {
			s.lg.Warn("closing connection: frame size out of bounds", "remote", c.RemoteAddr(), "size", size, "max", hi)
			return
		}
		if !budget.acquire(int(size)) {
			return
		}
		frame, err := readFrame(r, int(size), &s.unfilled)
		if err != nil {
			return
		}
		slot, err := s.handleFrame(ctx, frame)
		if err != nil {
			s.lg.Warn("closing connection: bad request", "remote", c.RemoteAddr(), "err", err)
			return
		}
		select {
		case slots <- slot:
		case <-ctx.Done():
			return
		}
		if slot.close {
			return
		}
	}
}

// readFrame reads a frame body of the announced size. A frame over 1 MiB is allocated
// whole at once when reserve has room for it (a produce request of a few MiB then costs
// no copy), so all connections together hold at most maxUnfilledFrameBytes for bytes not
// yet sent. Otherwise its buffer starts at 1 MiB and grows fourfold (never past size)
// only as bytes arrive, so a client that announces a large frame and sends little holds at
// most four times what it sent. (bytes.Buffer.ReadFrom was used here once: it doubled,
// and grew a full buffer once more to make room for the read that finds the end, clearing
// and copying three to four times each frame's size; the growing path alone still cost 9%
// of a saturated broker's CPU in copies.)
func readFrame(r io.Reader, size int, reserve *frameReserve) ([]byte, error) {
	if size > 1<<20 && reserve.take(size) {
		defer reserve.give(size)
		frame := make([]byte, size)
		if _, err := io.ReadFull(r, frame); err != nil {
			return nil, err
		}
		return frame, nil
	}
	frame := make([]byte, min(size, 1<<20))
	n := 0
	for {
		m, err := io.ReadFull(r, frame[n:])
		n += m
		if err != nil {
			return nil, err
		}
		if n == size {
			return frame, nil
		}
		grown := make([]byte, min(size, 4*len(frame)))
		copy(grown, frame)
		frame = grown
	}
}

func (s *Server) writeLoop(ctx context.Context, c net.Conn, slots <-chan *pending, budget *byteBudget) {
	w := bufio.NewWriterSize(c, 64<<10)
	var buf []byte
	var cuts []fileCut
	for slot := range slots {
		var resp kmsg.Response
		if slot.respond != nil {
			// respond may wait (acks=-1, long-poll fetch, JoinGroup): send what is ready
			// first, so a finished response never waits behind a slow one.
			if w.Buffered() > 0 {
				if err := w.Flush(); err != nil {
					return
				}
			}
			resp = slot.respond(ctx)
		}
		budget.release(slot.inBytes - 4)
		if resp == nil {
			s.observe(slot, 0)
			continue
		}
		buf = buf[:0]
		buf = append(buf, 0, 0, 0, 0)
		if !slot.raw {
			buf = binary.BigEndian.AppendUint32(buf, uint32(slot.hdr.correlationID))
		}
		// ApiVersions answers with header v0 even when flexible, so a client can read it
		// before it knows which versions we speak.
		if slot.flex && slot.hdr.apiKey != apiVersionsKey {
			buf = append(buf, 0)
		}
		// A Fetch response's records may be file ranges: they are cut into the encoded
		// bytes and sent from the files, and their descriptors let go however it ends.
		cuts = cuts[:0]
		if sr, ok := resp.(streamedResponse); ok {
			buf, cuts = sr.appendParts(buf, cuts)
		} else {
			buf = resp.AppendTo(buf)
		}
		size := len(buf) + filesLen(cuts)
		binary.BigEndian.PutUint32(buf, uint32(size-4))
		err := writeParts(w, c, buf, cuts)
		if sr, ok := resp.(streamedResponse); ok {
			sr.release()
		}
		clear(cuts)
		if err != nil {
			if errors.Is(err, errFileShrunk) {
				// The frame's length is out already; the rest cannot be sent.
				s.lg.Warn("closing connection: a fetched segment file was truncated while it was sent", "remote", c.RemoteAddr(), "err", err)
			}
			return
		}
		// With nothing queued behind it the response goes out now; otherwise the flush
		// before the next respond sends it.
		if len(slots) == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
		s.observe(slot, size)
		if cap(buf) > 1<<20 {
			buf = nil
		}
		if cap(cuts) > 4096 {
			cuts = nil
		}
		if slot.close {
			w.Flush()
			return
		}
	}
	w.Flush()
}

func (s *Server) observe(slot *pending, out int) {
	if s.metrics != nil {
		s.metrics.ObserveRequest(slot.hdr.apiKey, time.Since(slot.start), slot.inBytes, out)
	}
}

const apiVersionsKey = 18

// handleFrame parses one request and runs its synchronous part (validation, appends), so
// that appends from one connection happen in the order the client sent them.
func (s *Server) handleFrame(ctx context.Context, frame []byte) (*pending, error) {
	start := time.Now()
	sess := sessionOf(ctx)
	if sess != nil && sess.sasl.raw {
		return s.handleRawSASLToken(ctx, sess, frame, start), nil
	}
	hdr, body, err := parseHeader(frame)
	if err != nil {
		return nil, err
	}
	if err := sess.admit(hdr, s.saslNow()); err != nil {
		return nil, err
	}
	slot := &pending{hdr: hdr, start: start, inBytes: len(frame) + 4}
	api, ok := apis[hdr.apiKey]
	if !ok || hdr.apiVersion < api.min || hdr.apiVersion > api.max {
		if hdr.apiKey == apiVersionsKey {
			// KIP-511: answer an unknown ApiVersions version with a v0 response that says
			// UNSUPPORTED_VERSION and lists what we do speak.
			slot.respond = func(context.Context) kmsg.Response { return unsupportedApiVersions() }
			return slot, nil
		}
		return nil, fmt.Errorf("unsupported api key %d version %d (%s)", hdr.apiKey, hdr.apiVersion, kmsg.NameForKey(hdr.apiKey))
	}
	req := kmsg.RequestForKey(hdr.apiKey)
	req.SetVersion(hdr.apiVersion)
	slot.flex = req.IsFlexible()
	if slot.flex {
		body, err = skipTags(body)
		if err != nil {
			return nil, err
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(hdr.apiKey), hdr.apiVersion, err)
	}
	respond := api.handle(s, withClientID(ctx, hdr.clientID), req)
	slot.respond = respond
	if sess != nil && sess.sasl.closing {
		slot.close = true // a SASL failure: answered, then the connection closes
	}
	return slot, nil
}

func parseHeader(frame []byte) (requestHeader, []byte, error) {
	if len(frame) < 10 {
		return requestHeader{}, nil, errors.New("request header is truncated")
	}
	be := binary.BigEndian
	h := requestHeader{
		apiKey:        int16(be.Uint16(frame[0:])),
		apiVersion:    int16(be.Uint16(frame[2:])),
		correlationID: int32(be.Uint32(frame[4:])),
	}
	n := int16(be.Uint16(frame[8:]))
	rest := frame[10:]
	if n > 0 {
		if int(n) > len(rest) {
			return requestHeader{}, nil, errors.New("client id is truncated")
		}
		h.clientID = string(rest[:n])
		rest = rest[n:]
	}
	return h, rest, nil
}

// skipTags skips the request header's tagged fields (header v2).
func skipTags(b []byte) ([]byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		if _, b, err = uvarint(b); err != nil {
			return nil, err
		}
		var size uint64
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, errors.New("tagged field is truncated")
		}
		b = b[size:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, errors.New("bad uvarint in request header")
	}
	return v, b[n:], nil
}
