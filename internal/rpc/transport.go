package rpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Errors returned by Send and SendWait.
var (
	ErrBackpressure    = errors.New("rpc: peer queue full")
	ErrUnknownPeer     = errors.New("rpc: unknown peer")
	ErrClosed          = errors.New("rpc: transport closed")
	ErrMessageTooLarge = errors.New("rpc: message too large")
)

// Handler receives the messages of other nodes. It is called from the goroutine that reads the
// sender's connection, in arrival order for each sender; calls for different senders may run
// concurrently. The handler owns payload. A handler that blocks stops reading from that sender,
// which pushes back on it; Close waits for running handler calls to return.
type Handler func(from int32, msgType uint8, payload []byte)

// Options configures a Transport. Zero values take the defaults noted.
type Options struct {
	NodeID    int32  // this node's id; carried in every handshake
	ClusterID string // handshakes from another cluster are refused (at most 255 bytes)
	// ListenAddr is where Start listens, e.g. "127.0.0.1:9093" or "127.0.0.1:0".
	ListenAddr string
	// Handler receives every inbound message; a node's is its Registry's Dispatch. Nil
	// discards received messages.
	Handler Handler
	Logger  *slog.Logger // default: discard
	// TLS, when set, puts every connection under mutual TLS (see TLSConfig); nil is
	// plaintext. A node with TLS and one without cannot talk, and both log why.
	TLS *TLSConfig

	// MaxBatchBytes bounds the encoded messages the writer puts in one batch (default 1 MiB).
	// A single larger message still goes alone in its own batch.
	MaxBatchBytes int
	// MaxQueueBytes bounds the encoded bytes queued for one peer, including the batch being
	// written (default 64 MiB). Send returns ErrBackpressure beyond it. The default leaves room
	// for several busy Raft groups' replication windows (raft.HostOptions.MaxInflightBytes):
	// with 8 MiB, eight partitions under acks=1 load filled the queue, refused sends made Raft
	// probe its followers one message at a time, and dropped heartbeat responses ended
	// leaderships (CheckQuorum).
	MaxQueueBytes int
	// MaxFrameBytes is the largest frame body this node accepts, and so the largest message it
	// sends (default 16 MiB). Peers must agree on it.
	MaxFrameBytes int
	// BatchWindow, when positive, is how long the writer lingers after waking to let more
	// messages join a batch that is not yet full (default 0: write at once; batches still form
	// from whatever queued while the previous write ran).
	BatchWindow time.Duration

	DialTimeout time.Duration // dial plus handshake (default 5 s)
	// HandshakeTimeout is, inbound, the time allowed for the TLS handshake and again for
	// the hello (default 5 s).
	HandshakeTimeout time.Duration
	WriteTimeout     time.Duration // one batch write; past it the connection is dropped (default 10 s)
	MinBackoff       time.Duration // first redial delay after a failure (default 50 ms)
	MaxBackoff       time.Duration // cap on the redial delay (default 2 s)
	// DropAfter is how long a peer may stay unreachable before what is queued for it is
	// discarded (default 2 s). Until then queued messages wait for the connection.
	DropAfter time.Duration
}

func (o *Options) withDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxBatchBytes, 1<<20)
	def(&o.MaxQueueBytes, 64<<20)
	def(&o.MaxFrameBytes, 16<<20)
	defD(&o.DialTimeout, 5*time.Second)
	defD(&o.HandshakeTimeout, 5*time.Second)
	defD(&o.WriteTimeout, 10*time.Second)
	defD(&o.MinBackoff, 50*time.Millisecond)
	defD(&o.MaxBackoff, 2*time.Second)
	defD(&o.DropAfter, 2*time.Second)
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Transport is one node's end of the inter-broker network. All methods are safe for concurrent
// use.
type Transport struct {
	opts   Options
	log    *slog.Logger
	maxMsg int // largest encoded message Send accepts

	ctx    context.Context // cancelled by Close; bounds dials
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	started  bool
	ln       net.Listener
	peers    map[int32]*peer
	conns    map[net.Conn]struct{}   // every open connection, for Close
	inbound  map[int32]*inboundConn  // the current inbound connection per sender
	received map[int32]*recvCounters // per sender
	counters transportCounters
	tlsLog   logLimiter // failed TLS handshakes, inbound and outbound

	peerGone atomic.Pointer[func(id int32)] // see OnPeerGone
}

// OnPeerGone sets f to be called, on a goroutine of its own, when a dial to a peer is
// refused: nothing listens at its address, so its process is not running (or is not yet
// listening again). A killed process's sockets are closed by its kernel at once, so the
// first redial, at most a host heartbeat later, finds out; a network partition or a
// paused process times out instead and is never reported here. f is called once per
// episode: again only after a connection to the peer has succeeded.
func (t *Transport) OnPeerGone(f func(id int32)) { t.peerGone.Store(&f) }

// New returns a Transport; Start makes it listen. Peers may be added before or after Start.
func New(opts Options) (*Transport, error) {
	opts.withDefaults()
	if len(opts.ClusterID) > maxClusterID {
		return nil, fmt.Errorf("rpc: cluster id longer than %d bytes", maxClusterID)
	}
	maxMsg := opts.MaxFrameBytes - batchHeaderLen
	if opts.MaxQueueBytes < maxMsg {
		maxMsg = opts.MaxQueueBytes
	}
	if maxMsg < msgHeaderLen {
		return nil, errors.New("rpc: MaxFrameBytes or MaxQueueBytes too small for any message")
	}
	if opts.TLS != nil {
		if err := opts.TLS.check(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{
		opts:     opts,
		log:      opts.Logger.With("node", opts.NodeID),
		maxMsg:   maxMsg,
		ctx:      ctx,
		cancel:   cancel,
		peers:    map[int32]*peer{},
		conns:    map[net.Conn]struct{}{},
		inbound:  map[int32]*inboundConn{},
		received: map[int32]*recvCounters{},
		tlsLog:   logLimiter{every: 5 * time.Second},
	}, nil
}

// Start listens on Options.ListenAddr and serves inbound connections until Close.
func (t *Transport) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.started {
		return errors.New("rpc: already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(t.ctx, "tcp", t.opts.ListenAddr)
	if err != nil {
		return fmt.Errorf("rpc: listen: %w", err)
	}
	t.ln = ln
	t.started = true
	t.wg.Add(1)
	go t.acceptLoop(ln)
	return nil
}

// Addr is the address the transport listens on (useful with port 0), or nil before Start.
func (t *Transport) Addr() net.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ln == nil {
		return nil
	}
	return t.ln.Addr()
}

// Close stops listening, closes every connection, discards every queue and waits for all the
// transport's goroutines, including running handler calls, to finish. It is idempotent.
func (t *Transport) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.cancel()
	if t.ln != nil {
		t.ln.Close()
	}
	for c := range t.conns {
		c.Close()
	}
	peers := t.peers
	t.peers = map[int32]*peer{}
	t.mu.Unlock()
	for _, p := range peers {
		p.shutdown()
	}
	t.wg.Wait()
}

// SetPeer adds a peer or changes its address. A changed address takes effect at the next
// batch: the current connection is dropped and the new address dialled.
func (t *Transport) SetPeer(id int32, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if p, ok := t.peers[id]; ok {
		p.setAddr(addr)
		return
	}
	p := newPeer(t, id, addr)
	t.peers[id] = p
	t.wg.Add(1)
	go p.run()
}

// RemovePeer forgets a peer: its connection is closed and what is queued for it is dropped.
func (t *Transport) RemovePeer(id int32) {
	t.mu.Lock()
	p, ok := t.peers[id]
	delete(t.peers, id)
	t.mu.Unlock()
	if ok {
		p.shutdown()
	}
}

func (t *Transport) peer(id int32) (*peer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	p, ok := t.peers[id]
	if !ok {
		return nil, ErrUnknownPeer
	}
	return p, nil
}

// Send queues a message for a peer and returns at once. It returns ErrBackpressure when the
// peer's queue holds Options.MaxQueueBytes already; it never blocks and never queues beyond that
// bound. The transport keeps payload until the message is written: the caller must not modify
// it after Send returns nil. A nil error means queued, not delivered (see the package
// documentation for when messages are dropped).
func (t *Transport) Send(to int32, msgType uint8, payload []byte) error {
	_, err := t.send(to, msgType, payload)
	return err
}

// SendAll is Send of several messages queued together, in order, all or none: the writer
// takes them into one batch, so they share one frame and one write call unless together
// they exceed Options.MaxBatchBytes. A message that rides along with another, as a raft
// batch's visible reports do (internal/raftrpc), thus costs no write of its own.
func (t *Transport) SendAll(to int32, msgs ...Message) error {
	size := 0
	for _, m := range msgs {
		s := encodedSize(len(m.Payload))
		if s > t.maxMsg {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrMessageTooLarge, s, t.maxMsg)
		}
		size += s
	}
	p, err := t.peer(to)
	if err != nil {
		return err
	}
	_, err = p.enqueue(size, msgs...)
	return err
}

// SendWait is Send that waits for space in the peer's queue until ctx ends, the peer is
// removed or the transport is closed.
func (t *Transport) SendWait(ctx context.Context, to int32, msgType uint8, payload []byte) error {
	for {
		space, err := t.send(to, msgType, payload)
		if !errors.Is(err, ErrBackpressure) {
			return err
		}
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.ctx.Done():
			return ErrClosed
		}
	}
}

// send returns, with ErrBackpressure, a channel closed when the peer's queue next frees space.
func (t *Transport) send(to int32, msgType uint8, payload []byte) (<-chan struct{}, error) {
	size := encodedSize(len(payload))
	if size > t.maxMsg {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrMessageTooLarge, size, t.maxMsg)
	}
	p, err := t.peer(to)
	if err != nil {
		return nil, err
	}
	return p.enqueue(size, Message{Type: msgType, Payload: payload})
}

func (t *Transport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// track registers an open connection so that Close can close it; it refuses after Close.
func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, rawConn(c))
	t.mu.Unlock()
	c.Close()
}

// peer is the outbound side for one peer: its bounded queue, its writer goroutine and its
// one connection.
type peer struct {
	t  *Transport
	id int32

	mu       sync.Mutex
	addr     string
	addrGen  uint64 // bumped by setAddr; a connection to an older generation is dropped
	q        []Message
	qBytes   int           // encoded bytes queued, including the batch being written
	space    chan struct{} // closed and replaced whenever qBytes shrinks
	conn     net.Conn      // current connection, for shutdown to close
	down     time.Time     // when the peer became unreachable; zero while reachable
	refused  bool          // a dial was refused since the last connection (PeerGone told)
	stopped  bool
	wake     chan struct{} // cap 1: the queue has work
	stop     chan struct{}
	counters peerCounters
}

func newPeer(t *Transport, id int32, addr string) *peer {
	return &peer{
		t: t, id: id, addr: addr,
		space: make(chan struct{}),
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
	}
}

func (p *peer) setAddr(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if addr == p.addr {
		return
	}
	p.addr = addr
	p.addrGen++
	p.down = time.Time{}
}

// enqueue queues msgs, whose encoded sizes sum to size, all or none.
func (p *peer) enqueue(size int, msgs ...Message) (<-chan struct{}, error) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil, ErrUnknownPeer
	}
	if p.qBytes+size > p.t.opts.MaxQueueBytes {
		p.counters.backpressured++
		space := p.space
		p.mu.Unlock()
		return space, ErrBackpressure
	}
	p.q = append(p.q, msgs...)
	p.qBytes += size
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil, nil
}

// shutdown stops the writer, closes the connection and drops the queue.
func (p *peer) shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	close(p.stop)
	if p.conn != nil {
		p.conn.Close()
	}
	// Wakes SendWait callers too, which then see ErrUnknownPeer or ErrClosed.
	p.dropQueuedLocked()
	close(p.space)
	p.space = make(chan struct{})
}

// releaseLocked frees n queued bytes and wakes SendWait callers.
func (p *peer) releaseLocked(n int) {
	if n == 0 {
		return
	}
	p.qBytes -= n
	close(p.space)
	p.space = make(chan struct{})
}

// dropQueuedLocked discards everything queued (not the batch in flight) and counts it.
func (p *peer) dropQueuedLocked() int {
	n := 0
	for _, m := range p.q {
		n += encodedSize(len(m.Payload))
	}
	p.counters.dropped += uint64(len(p.q))
	dropped := len(p.q)
	clear(p.q)
	p.q = p.q[:0]
	p.releaseLocked(n)
	return dropped
}

// take moves up to MaxBatchBytes of queued messages (at least one) into batch.
func (p *peer) take(batch []Message) ([]Message, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	limit := p.t.opts.MaxBatchBytes
	n, size := 0, 0
	for n < len(p.q) {
		s := encodedSize(len(p.q[n].Payload))
		if n > 0 && size+s > limit {
			break
		}
		size += s
		n++
	}
	batch = append(batch, p.q[:n]...)
	clear(p.q[:n])
	p.q = p.q[n:]
	if len(p.q) == 0 {
		p.q = p.q[:0:0] // let the backing array go once drained
	}
	return batch, size
}

func (p *peer) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.q)
}

// sleep waits d or until stop; it reports whether the peer is still running.
func (p *peer) sleep(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-p.stop:
		return false
	}
}

// run is the peer's writer goroutine.
func (p *peer) run() {
	defer p.t.wg.Done()
	var (
		conn    net.Conn
		dead    <-chan struct{} // closed once the peer closes conn
		connGen uint64
		backoff time.Duration
		batch   []Message
		buf     []byte
	)
	closeConn := func() {
		if conn != nil {
			p.mu.Lock()
			p.conn = nil
			p.mu.Unlock()
			p.t.untrack(conn)
			conn = nil
		}
	}
	defer closeConn()
	for {
		if p.queued() == 0 {
			select {
			case <-p.stop:
				return
			case <-p.wake:
				continue
			}
		}
		select {
		case <-p.stop:
			return
		default:
		}
		p.mu.Lock()
		addr, gen := p.addr, p.addrGen
		full := p.qBytes >= p.t.opts.MaxBatchBytes
		p.mu.Unlock()
		if conn != nil {
			select {
			case <-dead:
				closeConn() // the peer went away while we were idle: redial, drop nothing
			default:
				if connGen != gen {
					closeConn()
				}
			}
		}
		if conn == nil {
			c, d, err := p.dial(addr)
			if err != nil {
				if p.t.ctx.Err() != nil {
					return
				}
				p.dialFailed(err, addr)
				backoff = nextBackoff(backoff, p.t.opts.MinBackoff, p.t.opts.MaxBackoff)
				if !p.sleep(backoff) {
					return
				}
				continue
			}
			conn, dead, connGen, backoff = c, d, gen, 0
		}
		if w := p.t.opts.BatchWindow; w > 0 && !full {
			if !p.sleep(w) {
				return
			}
		}
		var size int
		batch, size = p.take(batch[:0])
		buf = appendBatch(buf[:0], batch)
		conn.SetWriteDeadline(time.Now().Add(p.t.opts.WriteTimeout))
		_, err := conn.Write(buf)
		p.mu.Lock()
		if err != nil {
			p.counters.dropped += uint64(len(batch))
		} else {
			p.counters.msgsSent += uint64(len(batch))
			p.counters.bytesSent += uint64(len(buf))
			p.counters.batchesSent++
		}
		p.releaseLocked(size)
		p.mu.Unlock()
		clear(batch)
		if cap(buf) > 4*p.t.opts.MaxBatchBytes {
			buf = nil // do not pin the buffer of one outsized message
		}
		if err != nil {
			select {
			case <-p.stop:
				return
			default:
			}
			p.t.log.Warn("rpc: write to peer failed; batch dropped, reconnecting",
				"peer", p.id, "addr", addr, "messages", len(batch), "err", err)
			closeConn()
		}
	}
}

func nextBackoff(cur, lo, hi time.Duration) time.Duration {
	if cur <= 0 {
		cur = lo
	} else {
		cur *= 2
	}
	if cur > hi {
		cur = hi
	}
	// Up to 20% jitter so that peers that failed together do not redial in lockstep.
	return cur - time.Duration(rand.Int64N(int64(cur)/5+1))
}

// dialFailed counts a failed dial and drops the queue once the peer has been down too long.
// The first refused dial since the last connection is told to the PeerGone observer.
func (p *peer) dialFailed(err error, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counters.dialFailures++
	if errors.Is(err, syscall.ECONNREFUSED) && !p.refused {
		p.refused = true
		if f := p.t.peerGone.Load(); f != nil {
			p.t.wg.Add(1)
			go func() { // never under p.mu: the observer may send to this peer
				defer p.t.wg.Done()
				(*f)(p.id)
			}()
		}
	}
	now := time.Now()
	if p.down.IsZero() {
		p.down = now
	}
	dropped := 0
	if now.Sub(p.down) >= p.t.opts.DropAfter {
		dropped = p.dropQueuedLocked()
	}
	p.t.log.Debug("rpc: dial failed", "peer", p.id, "addr", addr, "dropped", dropped, "err", err)
}

// dial connects to the peer and runs the handshake. The returned channel is closed when the
// peer closes the connection.
func (p *peer) dial(addr string) (net.Conn, <-chan struct{}, error) {
	o := &p.t.opts
	ctx, cancel := context.WithTimeout(p.t.ctx, o.DialTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if !p.t.track(c) {
		c.Close()
		return nil, nil, ErrClosed
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		p.t.untrack(c)
		return nil, nil, ErrClosed
	}
	p.conn = c
	p.mu.Unlock()
	fail := func(err error) (net.Conn, <-chan struct{}, error) {
		p.mu.Lock()
		p.conn = nil
		p.mu.Unlock()
		p.t.untrack(c)
		return nil, nil, err
	}
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	if o.TLS != nil {
		sc, err := clientTLS(ctx, c, o.TLS.Client, addr)
		if err != nil {
			p.mu.Lock()
			p.counters.tlsFailures++
			p.mu.Unlock()
			p.t.tlsLog.warn(p.t.log, "rpc: TLS handshake with peer failed", "peer", p.id, "addr", addr, "err", err)
			return fail(err)
		}
		// Close closes the socket either way; the rest of the exchange goes through TLS.
		c = sc
		p.mu.Lock()
		p.conn = c
		p.mu.Unlock()
	}
	if _, err := c.Write(appendHello(nil, hello{From: o.NodeID, To: p.id, Cluster: o.ClusterID})); err != nil {
		return fail(err)
	}
	br := bufio.NewReaderSize(c, 64)
	var hdr [frameHeaderLen]byte
	body, err := readFrame(br, &hdr, maxHelloFrame)
	if err != nil {
		return fail(fmt.Errorf("handshake: %w", err))
	}
	a, err := decodeAck(body)
	if err != nil {
		return fail(fmt.Errorf("handshake: %w", err))
	}
	if !a.OK {
		p.t.log.Error("rpc: peer refused our handshake", "peer", p.id, "addr", addr, "reason", a.Reason)
		return fail(fmt.Errorf("handshake refused by %s: %s", addr, a.Reason))
	}
	if a.From != p.id {
		p.t.log.Error("rpc: peer address answers as another node", "peer", p.id, "addr", addr, "answered", a.From)
		return fail(fmt.Errorf("handshake: %s is node %d, not %d", addr, a.From, p.id))
	}
	c.SetDeadline(time.Time{})
	p.mu.Lock()
	first := p.counters.connects == 0
	p.counters.connects++
	if !first {
		p.counters.reconnects++
	}
	p.down = time.Time{}
	p.refused = false
	p.mu.Unlock()
	// The connection carries nothing back; this reader only notices the peer closing it, so
	// that the next write fails at once rather than into a dead socket.
	dead := make(chan struct{})
	p.t.wg.Add(1)
	go func() {
		defer p.t.wg.Done()
		defer close(dead)
		var b [1]byte
		for {
			if _, err := br.Read(b[:]); err != nil {
				c.Close()
				return
			}
		}
	}()
	return c, dead, nil
}
