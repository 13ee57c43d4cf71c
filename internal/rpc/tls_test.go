package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/tlsconf"
	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
)

// pki is a test cluster's CA and the files of its nodes.
type pki struct {
	t   *testing.T
	dir string
	ca  *tlstest.CA
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{t: t, dir: dir, ca: ca}
}

func (p *pki) leaf(cn string) tlstest.Leaf {
	p.t.Helper()
	l, err := p.ca.Issue(pkix.Name{CommonName: cn})
	if err != nil {
		p.t.Fatal(err)
	}
	return l
}

// mutualTLS is what a broker builds: one reloader, client certificates required.
func mutualTLS(t *testing.T, cert, key, ca string) *TLSConfig {
	t.Helper()
	r, err := tlsconf.New(tlsconf.Files{Cert: cert, Key: key, CA: ca, ClientAuth: tlsconf.ClientAuthRequired})
	if err != nil {
		t.Fatal(err)
	}
	return &TLSConfig{Server: r.ServerConfig(), Client: r.MutualClientConfig()}
}

func leafTLS(t *testing.T, l tlstest.Leaf) *TLSConfig {
	return mutualTLS(t, l.CertFile, l.KeyFile, l.CAFile)
}

func tlsOptions(id int32, rec *recorder, c *TLSConfig) Options {
	o := testOptions(id, rec)
	o.TLS = c
	return o
}

// logBuffer is a logger whose output a test can search.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s)
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func TestTLSPeersExchangeMessages(t *testing.T) {
	p := newPKI(t, "cluster")
	rec2, rec1 := &recorder{}, &recorder{}
	b := startNode(t, tlsOptions(2, rec2, leafTLS(t, p.leaf("node2"))))
	a := startNode(t, tlsOptions(1, rec1, leafTLS(t, p.leaf("node1"))))
	a.SetPeer(2, b.Addr().String())
	b.SetPeer(1, a.Addr().String())
	const n = 500
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := uint32(0); i < n; i++ {
		if err := a.SendWait(ctx, 2, 1, seqPayload(1, i)); err != nil {
			t.Fatal(err)
		}
		if err := b.SendWait(ctx, 1, 2, seqPayload(2, i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "every message both ways", func() bool { return rec2.count(1) == n && rec1.count(2) == n })
	for i, m := range rec2.from(1) {
		if !bytes.Equal(m.Payload, seqPayload(1, uint32(i))) {
			t.Fatalf("message %d out of order", i)
		}
	}
	if id, err := a.Probe(ctx, b.Addr().String()); err != nil || id != 2 {
		t.Fatalf("probe over TLS: %d, %v", id, err)
	}
	if s := b.Stats(); s.InboundTLSFailures != 0 || s.InboundRejected != 0 {
		t.Fatalf("refusals between peers of one CA: %+v", s)
	}
}

// refused waits until tx has failed to reach rx several times and checks nothing arrived.
func refused(t *testing.T, rx, tx *Transport, rec *recorder, rxFailures func() bool) {
	t.Helper()
	tx.SetPeer(2, rx.Addr().String())
	if err := tx.Send(2, 1, []byte("raft message")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "repeated refusals", func() bool {
		return peerStats(tx, 2).DialFailures >= 3 && rxFailures()
	})
	if n := rec.count(1); n != 0 {
		t.Fatalf("%d messages delivered from a refused node", n)
	}
	if s := peerStats(tx, 2); s.Connects != 0 || s.MessagesSent != 0 {
		t.Fatalf("refused node connected: %+v", s)
	}
	if s := rx.Stats(); len(s.Peers) != 0 {
		t.Fatalf("refused node counted as a sender: %+v", s.Peers)
	}
}

func TestTLSRefusesACertificateOfAnotherCA(t *testing.T) {
	cluster, other := newPKI(t, "cluster"), newPKI(t, "other")
	t.Run("the stranger trusts our CA", func(t *testing.T) {
		// The dangerous case: it would accept us, so it is our check that refuses it.
		rec := &recorder{}
		var rxLog logBuffer
		o := tlsOptions(2, rec, leafTLS(t, cluster.leaf("node2")))
		o.Logger = rxLog.logger()
		rx := startNode(t, o)
		l := other.leaf("node1")
		tx := startNode(t, tlsOptions(1, nil, mutualTLS(t, l.CertFile, l.KeyFile, cluster.ca.CertFile)))
		refused(t, rx, tx, rec, func() bool { return rx.Stats().InboundTLSFailures >= 3 })
		if !rxLog.has("inbound TLS handshake failed") || !rxLog.has("unknown authority") {
			t.Fatalf("refusal not logged with its cause:\n%s", rxLog.buf.String())
		}
	})
	t.Run("the stranger trusts only its own CA", func(t *testing.T) {
		rec := &recorder{}
		rx := startNode(t, tlsOptions(2, rec, leafTLS(t, cluster.leaf("node2"))))
		tx := startNode(t, tlsOptions(1, nil, leafTLS(t, other.leaf("node1"))))
		refused(t, rx, tx, rec, func() bool { return rx.Stats().InboundTLSFailures >= 3 })
		if s := peerStats(tx, 2); s.TLSFailures < 3 {
			t.Fatalf("dialler's TLS failures not counted: %+v", s)
		}
	})
}

func TestTLSRefusesAPeerWithoutCertificate(t *testing.T) {
	p := newPKI(t, "cluster")
	rec := &recorder{}
	rx := startNode(t, tlsOptions(2, rec, leafTLS(t, p.leaf("node2"))))
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(p.ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	noCert := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: "localhost"}

	t.Run("transport", func(t *testing.T) {
		tx := startNode(t, tlsOptions(1, nil, &TLSConfig{Server: &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert}, Client: noCert}))
		before := rx.Stats().InboundTLSFailures
		refused(t, rx, tx, rec, func() bool { return rx.Stats().InboundTLSFailures >= before+3 })
	})
	t.Run("raw frames after the handshake", func(t *testing.T) {
		// In TLS 1.3 the client's side of the handshake ends before the server has checked
		// its certificate: a client without one may already write. None of it is delivered.
		c, err := tls.Dial("tcp", rx.Addr().String(), noCert)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(appendHello(nil, hello{From: 1, To: 2, Cluster: testCluster}))
		c.Write(appendBatch(nil, []Message{{Type: 1, Payload: []byte("evil")}}))
		expectClosed(t, c)
		if n := rec.count(1); n != 0 {
			t.Fatalf("%d messages delivered", n)
		}
	})
}

func TestTLSAgainstPlaintextBothSidesSaySo(t *testing.T) {
	p := newPKI(t, "cluster")
	t.Run("TLS listener, plaintext dialler", func(t *testing.T) {
		rec := &recorder{}
		var rxLog, txLog logBuffer
		o := tlsOptions(2, rec, leafTLS(t, p.leaf("node2")))
		o.Logger = rxLog.logger()
		rx := startNode(t, o)
		o = testOptions(1, nil)
		o.Logger = txLog.logger()
		tx := startNode(t, o)
		refused(t, rx, tx, rec, func() bool { return rx.Stats().InboundTLSFailures >= 3 })
		if !rxLog.has("dialler connected in plaintext") {
			t.Fatalf("TLS side's log does not say the dialler was plaintext:\n%s", rxLog.buf.String())
		}
		if !txLog.has("requires TLS on the inter-broker transport") {
			t.Fatalf("plaintext side's log does not say the peer requires TLS:\n%s", txLog.buf.String())
		}
		_, err := Probe(context.Background(), rx.Addr().String(), 1, testCluster)
		if err == nil || !strings.Contains(err.Error(), "requires TLS") {
			t.Fatalf("plaintext probe of a TLS node: %v", err)
		}
	})
	t.Run("plaintext listener, TLS dialler", func(t *testing.T) {
		rec := &recorder{}
		var rxLog, txLog logBuffer
		o := testOptions(2, rec)
		o.Logger = rxLog.logger()
		rx := startNode(t, o)
		o = tlsOptions(1, nil, leafTLS(t, p.leaf("node1")))
		o.Logger = txLog.logger()
		tx := startNode(t, o)
		refused(t, rx, tx, rec, func() bool { return rx.Stats().InboundRejected >= 3 })
		if !rxLog.has("dialler sent a TLS hello") {
			t.Fatalf("plaintext side's log does not say the dialler spoke TLS:\n%s", rxLog.buf.String())
		}
		if !txLog.has("answered in plaintext") {
			t.Fatalf("TLS side's log does not say the peer answered in plaintext:\n%s", txLog.buf.String())
		}
		_, err := tx.Probe(context.Background(), rx.Addr().String())
		if err == nil || !strings.Contains(err.Error(), "answered in plaintext") {
			t.Fatalf("TLS probe of a plaintext node: %v", err)
		}
	})
}

func TestTLSHandshakeTimeout(t *testing.T) {
	p := newPKI(t, "cluster")
	o := tlsOptions(2, nil, leafTLS(t, p.leaf("node2")))
	o.HandshakeTimeout = 200 * time.Millisecond
	rx := startNode(t, o)
	for _, send := range [][]byte{nil, {0x16, 0x03, 0x01}} { // silence, and a record begun
		c, err := net.Dial("tcp", rx.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(send)
		start := time.Now()
		expectClosed(t, c)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("silent peer held for %v", d)
		}
		c.Close()
	}
	waitFor(t, 5*time.Second, "both counted", func() bool { return rx.Stats().InboundTLSFailures == 2 })
}

// install copies a leaf's files to fixed names, atomically, as a certificate manager does.
func install(t *testing.T, dir string, l tlstest.Leaf) {
	t.Helper()
	for src, dst := range map[string]string{l.CertFile: "cert.pem", l.KeyFile: "key.pem", l.CAFile: "ca.pem"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, dst+".tmp")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, dst)); err != nil {
			t.Fatal(err)
		}
	}
}

func installedTLS(t *testing.T, dir string) *TLSConfig {
	return mutualTLS(t, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem"))
}

func TestTLSCertificateRotation(t *testing.T) {
	oldCA, newCA := newPKI(t, "old"), newPKI(t, "new")
	dirA, dirB := t.TempDir(), t.TempDir()
	install(t, dirA, oldCA.leaf("node1"))
	install(t, dirB, oldCA.leaf("node2"))
	rec := &recorder{}
	b := startNode(t, tlsOptions(2, rec, installedTLS(t, dirB)))
	o := tlsOptions(1, nil, installedTLS(t, dirA))
	o.DropAfter = time.Minute // keep the message below queued while a still has old files
	a := startNode(t, o)
	a.SetPeer(2, b.Addr().String())
	a.Send(2, 1, []byte("before"))
	waitFor(t, 10*time.Second, "first message", func() bool { return rec.count(1) == 1 })

	// Both nodes move to a new CA, files replaced under the running transports.
	install(t, dirA, newCA.leaf("node1"))
	install(t, dirB, newCA.leaf("node2"))
	// Each look is a new connection; the reloader looks at the files again within a second.
	waitFor(t, 10*time.Second, "b serving the new certificate", func() bool {
		served := servedCert(t, b.Addr().String(), dirA)
		return served != nil && served.Issuer.CommonName == "new"
	})
	// The connection a had stays up; a new one is made with the new files.
	a.RemovePeer(2)
	a.SetPeer(2, b.Addr().String())
	a.Send(2, 1, []byte("after"))
	waitFor(t, 10*time.Second, "a message over a new connection", func() bool { return rec.count(1) == 2 })

	// A node still holding the old CA's certificate is refused from now on.
	oldPeer := startNode(t, tlsOptions(3, nil, leafTLS(t, oldCA.leaf("node3"))))
	oldPeer.SetPeer(2, b.Addr().String())
	oldPeer.Send(2, 1, []byte("stale"))
	waitFor(t, 10*time.Second, "the old-CA node refused", func() bool { return peerStats(oldPeer, 2).DialFailures >= 2 })
	if n := rec.count(3); n != 0 {
		t.Fatalf("%d messages from an old-CA node after rotation", n)
	}
}

// servedCert is the certificate a TLS server at addr presents to a client with dir's files,
// or nil when the handshake fails.
func servedCert(t *testing.T, addr, dir string) *x509.Certificate {
	cfg := installedTLS(t, dir).Client
	var got *x509.Certificate
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		got = cs.PeerCertificates[0]
		return nil
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil
	}
	c.Close()
	return got
}

func TestNewRefusesIncompleteTLS(t *testing.T) {
	p := newPKI(t, "cluster")
	full := leafTLS(t, p.leaf("node1"))
	for name, c := range map[string]*TLSConfig{
		"no client":            {Server: full.Server},
		"no server":            {Client: full.Client},
		"client cert optional": {Server: &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven}, Client: full.Client},
	} {
		if _, err := New(tlsOptions(1, nil, c)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// fuzzConn is an accepted connection that reads the fuzzer's bytes and swallows writes.
type fuzzConn struct{ r *bytes.Reader }

func (c *fuzzConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *fuzzConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *fuzzConn) Close() error                     { return nil }
func (c *fuzzConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *fuzzConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzTLSAccept feeds garbage to the accept path of a transport with TLS on: it must close
// the connection without a panic, and nothing may reach the handler, since no input
// completes a handshake without the cluster CA's signature.
func FuzzTLSAccept(f *testing.F) {
	dir := f.TempDir()
	ca, err := tlstest.NewCA(dir, "cluster")
	if err != nil {
		f.Fatal(err)
	}
	l, err := ca.Issue(pkix.Name{CommonName: "node2"})
	if err != nil {
		f.Fatal(err)
	}
	r, err := tlsconf.New(tlsconf.Files{Cert: l.CertFile, Key: l.KeyFile, CA: l.CAFile, ClientAuth: tlsconf.ClientAuthRequired})
	if err != nil {
		f.Fatal(err)
	}
	delivered := 0
	o := testOptions(2, nil)
	o.TLS = &TLSConfig{Server: r.ServerConfig(), Client: r.MutualClientConfig()}
	o.Handler = func(int32, uint8, []byte) { delivered++ }
	tr, err := New(o)
	if err != nil {
		f.Fatal(err)
	}
	defer tr.Close()
	hello := appendHello(nil, hello{From: 1, To: 2, Cluster: testCluster})
	f.Add(hello)
	f.Add(append(hello, appendBatch(nil, []Message{{Type: 1, Payload: []byte("x")}})...))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00})
	f.Add([]byte{0x16, 0x03, 0x03, 0xff, 0xff})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &fuzzConn{r: bytes.NewReader(in)}
		if !tr.track(c) {
			t.Fatal("transport closed")
		}
		tr.wg.Add(1)
		tr.serve(c)
		if delivered != 0 {
			t.Fatalf("garbage delivered %d messages", delivered)
		}
	})
}
