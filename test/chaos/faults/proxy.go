package faults

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The inter-broker rpc wire format, version 1 (see the package documentation of
// internal/rpc). Every connection is one-directional: the dialler's first frame is a hello
//
//	frame = length:uint32 | crc:uint32 (CRC32C of body) | body[length]   (big endian)
//	body  = version:uint8 (=1) | kind:uint8 (hello = 1) |
//	        from:int32 | to:int32 | clusterLen:uint16 | cluster
//
// and everything after it (the listener's ack, the dialler's batches) is relayed as bytes.
// This is a deliberately independent parser: a wire change the harness does not understand
// makes the proxy refuse connections, loudly, rather than relay traffic it cannot attribute.
const (
	rpcWireVersion   = 1
	rpcKindHello     = 1
	rpcFrameHeader   = 8
	rpcMaxHelloFrame = 1024
	helloTimeout     = 5 * time.Second
	dialTimeout      = 5 * time.Second
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Hello is the decoded handshake of an rpc connection.
type Hello struct {
	From, To int32
	Cluster  string
}

// ReadHello reads the first frame of an rpc connection and decodes it as a hello. It
// returns the raw bytes read (to be replayed to the real listener) along with the hello.
func ReadHello(r io.Reader) (Hello, []byte, error) {
	var h Hello
	hdr := make([]byte, rpcFrameHeader)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return h, nil, err
	}
	n := binary.BigEndian.Uint32(hdr)
	if n < 12 || n > rpcMaxHelloFrame {
		return h, nil, fmt.Errorf("first frame of %d bytes is not a hello", n)
	}
	raw := make([]byte, rpcFrameHeader+int(n))
	copy(raw, hdr)
	if _, err := io.ReadFull(r, raw[rpcFrameHeader:]); err != nil {
		return h, nil, err
	}
	body := raw[rpcFrameHeader:]
	if got, want := crc32.Checksum(body, castagnoli), binary.BigEndian.Uint32(hdr[4:]); got != want {
		return h, nil, fmt.Errorf("hello crc %08x, frame says %08x", got, want)
	}
	if body[0] != rpcWireVersion || body[1] != rpcKindHello {
		return h, nil, fmt.Errorf("first frame has version %d kind %d; this proxy understands version %d hellos (kind %d)",
			body[0], body[1], rpcWireVersion, rpcKindHello)
	}
	b := body[2:]
	h.From = int32(binary.BigEndian.Uint32(b))
	h.To = int32(binary.BigEndian.Uint32(b[4:]))
	cl := int(binary.BigEndian.Uint16(b[8:]))
	if len(b) != 10+cl {
		return h, nil, fmt.Errorf("hello cluster id length %d does not match the frame", cl)
	}
	h.Cluster = string(b[10:])
	return h, raw, nil
}

// ProxyStats counts what one broker's proxy did.
type ProxyStats struct {
	Relayed  int64 // connections relayed to the broker
	Refused  int64 // connections closed because their source was cut
	Dropped  int64 // relayed connections closed by a Cut
	BadHello int64 // connections whose first frame was not a hello this proxy understands
	Delayed  int64 // chunks held back for a link delay
	// TLSFailed counts connections closed because a TLS handshake failed, on either side
	// of the proxy (Options.RPCTLS).
	TLSFailed int64
}

// proxyTLS is the proxy's side of the inter-broker mutual TLS: it ends each dialler's TLS
// as server (it must read the hello, which TLS hides) and dials the broker afresh as
// client, both with a certificate of the cluster's CA.
type proxyTLS struct {
	server, client *tls.Config
}

// rawClosingConn is a TLS connection whose Close closes the socket at once: tls.Conn.Close
// first writes a close_notify, which blocks for seconds on a paused broker that stopped
// reading, and a cut must drop its links at once.
type rawClosingConn struct {
	*tls.Conn
	raw net.Conn
}

func (c rawClosingConn) Close() error { return c.raw.Close() }

// proxy sits on one broker's advertised rpc address and relays each inbound connection to
// the broker's real rpc listener, unless the sending node (from the hello) is cut.
type proxy struct {
	to   int32
	ln   net.Listener
	logf func(format string, args ...any)
	tls  *proxyTLS // nil: plaintext rpc

	mu      sync.Mutex
	target  string
	blocked map[int32]bool
	delay   map[int32]time.Duration // added to each chunk from that sender; absent = none
	links   map[*link]struct{}
	pending map[net.Conn]struct{} // accepted, not yet relayed or refused
	closed  bool

	wg                                                     sync.WaitGroup
	relayed, refused, dropped, badHell, delayed, tlsFailed atomic.Int64
}

type link struct {
	from    int32
	in, out net.Conn
	once    sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		l.in.Close()
		l.out.Close()
	})
}

func newProxy(to int32, logf func(string, ...any), tlsCfg *proxyTLS) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{to: to, ln: ln, logf: logf, tls: tlsCfg, blocked: map[int32]bool{}, delay: map[int32]time.Duration{}, links: map[*link]struct{}{},
		pending: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) setTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: do not spin
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

func (p *proxy) handle(in net.Conn) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		in.Close()
		return
	}
	sock := in // in becomes the TLS connection over it, when the rpc has TLS
	p.pending[sock] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, sock)
		p.mu.Unlock()
	}()
	in.SetReadDeadline(time.Now().Add(helloTimeout))
	if p.tls != nil {
		sc := tls.Server(in, p.tls.server)
		if err := sc.Handshake(); err != nil {
			p.tlsFailed.Add(1)
			p.logf("proxy of node %d: TLS handshake with %s failed: %v", p.to, in.RemoteAddr(), err)
			in.Close()
			return
		}
		in = rawClosingConn{Conn: sc, raw: in}
	}
	h, raw, err := ReadHello(in)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			p.badHell.Add(1)
			p.logf("proxy of node %d: connection from %s refused: %v", p.to, in.RemoteAddr(), err)
		}
		in.Close()
		return
	}
	in.SetReadDeadline(time.Time{})
	p.mu.Lock()
	target, refuse := p.target, p.closed || p.blocked[h.From]
	p.mu.Unlock()
	if refuse {
		p.refused.Add(1)
		in.Close()
		return
	}
	out, err := p.dial(target)
	if err != nil { // the broker is down: its peer sees a failed handshake and redials
		in.Close()
		return
	}
	l := &link{from: h.From, in: in, out: out}
	p.mu.Lock()
	// A Cut may have come while dialling: it must not leave a relayed connection behind.
	if p.closed || p.blocked[h.From] {
		p.mu.Unlock()
		p.refused.Add(1)
		l.close()
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	p.relayed.Add(1)
	defer func() {
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	if _, err := out.Write(raw); err != nil {
		l.close()
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(in, out) // the ack, and anything else the listener sends
		l.close()
		close(done)
	}()
	relayDelayed(out, in, func() time.Duration {
		d := p.delayOf(h.From)
		if d > 0 {
			p.delayed.Add(1)
		}
		return d
	})
	l.close()
	<-done
}

// dial connects to the broker's own rpc listener, under TLS when the cluster has it.
func (p *proxy) dial(target string) (net.Conn, error) {
	raw, err := net.DialTimeout("tcp", target, dialTimeout)
	if err != nil || p.tls == nil {
		return raw, err
	}
	raw.SetDeadline(time.Now().Add(dialTimeout))
	c := tls.Client(raw, p.tls.client)
	if err := c.Handshake(); err != nil {
		p.tlsFailed.Add(1)
		p.logf("proxy of node %d: TLS handshake with the broker at %s failed: %v", p.to, target, err)
		raw.Close()
		return nil, err
	}
	raw.SetDeadline(time.Time{})
	return rawClosingConn{Conn: c, raw: raw}, nil
}

// setDelay makes every chunk from node from reach the broker d after the proxy read it,
// on open connections too (from their next chunk on); d <= 0 removes the delay.
func (p *proxy) setDelay(from int32, d time.Duration) {
	p.mu.Lock()
	if d > 0 {
		p.delay[from] = d
	} else {
		delete(p.delay, from)
	}
	p.mu.Unlock()
}

func (p *proxy) delayOf(from int32) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay[from]
}

// cut blocks new connections from node from and closes the open ones.
func (p *proxy) cut(from int32) {
	p.mu.Lock()
	p.blocked[from] = true
	var drop []*link
	for l := range p.links {
		if l.from == from {
			drop = append(drop, l)
		}
	}
	p.mu.Unlock()
	for _, l := range drop {
		p.dropped.Add(1)
		l.close()
	}
}

func (p *proxy) heal(from int32) {
	p.mu.Lock()
	delete(p.blocked, from)
	p.mu.Unlock()
}

func (p *proxy) healAll() {
	p.mu.Lock()
	clear(p.blocked)
	p.mu.Unlock()
}

func (p *proxy) isCut(from int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked[from]
}

func (p *proxy) stats() ProxyStats {
	return ProxyStats{Relayed: p.relayed.Load(), Refused: p.refused.Load(), Dropped: p.dropped.Load(), BadHello: p.badHell.Load(), Delayed: p.delayed.Load(), TLSFailed: p.tlsFailed.Load()}
}

// close stops accepting, closes every relayed connection and waits for the relays to end.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	for c := range p.pending {
		c.Close()
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
}
