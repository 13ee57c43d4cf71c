package kafka

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
	"github.com/cairn-io/cairn/internal/tlsconf"
	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
)

type tlsFixture struct {
	ca     *tlstest.CA
	server tlstest.Leaf
	client tls.Certificate
	pool   *x509.CertPool
}

func newTLSFixture(t testing.TB) tlsFixture {
	t.Helper()
	ca, err := tlstest.NewCA(t.TempDir(), "cairn-test")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(pkix.Name{CommonName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ca.Issue(pkix.Name{CommonName: "Alice", Organization: []string{"Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(cl.CertFile, cl.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return tlsFixture{ca: ca, server: srv, client: cert, pool: pool}
}

// serveTLS serves an SSL listener with the client authentication and mapping rules given.
func serveTLS(t *testing.T, fx tlsFixture, clientAuth, rules string) (*Server, string) {
	t.Helper()
	s := newTestServer(t)
	r, err := tlsconf.New(tlsconf.Files{Cert: fx.server.CertFile, Key: fx.server.KeyFile, CA: fx.ca.CertFile, ClientAuth: clientAuth})
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := security.ParsePrincipalMappingRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeListener(ln, Listener{Name: "SSL", TLS: r.ServerConfig(), Principals: mapper})
	t.Cleanup(s.Close)
	return s, ln.Addr().String()
}

// apiVersionsOver sends ApiVersions on c and reports whether an answer came back.
func apiVersionsOver(t *testing.T, c net.Conn) error {
	t.Helper()
	writeFrame(t, c, kmsg.NewPtrApiVersionsRequest(), 3, 1)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [8]byte
	if _, err := io.ReadFull(bufio.NewReader(c), hdr[:]); err != nil {
		return err
	}
	if corr := binary.BigEndian.Uint32(hdr[4:]); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	return nil
}

// waitForStat waits until what reports true, for counters bumped on the server's goroutine.
func waitForStat(t *testing.T, s *Server, what func(TLSStats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !what(s.TLSStats()) {
		if time.Now().After(deadline) {
			t.Fatalf("stats stayed %+v", s.TLSStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSSLListenerServesKafkaOverTLS(t *testing.T) {
	fx := newTLSFixture(t)
	_, addr := serveTLS(t, fx, tlsconf.ClientAuthNone, "")
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: fx.pool, ServerName: "localhost", MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := apiVersionsOver(t, c); err != nil {
		t.Fatal(err)
	}
	// TLS 1.1 is refused at the handshake.
	old, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: fx.pool, ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err == nil {
		old.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
}

func TestMutualTLSPrincipalIsTheMappedSubject(t *testing.T) {
	fx := newTLSFixture(t)
	s := newTestServer(t)
	t.Cleanup(s.Close)
	r, err := tlsconf.New(tlsconf.Files{Cert: fx.server.CertFile, Key: fx.server.KeyFile, CA: fx.ca.CertFile, ClientAuth: tlsconf.ClientAuthRequested})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		rules   string
		cert    bool
		want    security.Principal
		refused bool
	}{
		{rules: "RULE:^CN=([^,]*),.*$/$1/L", cert: true, want: "User:alice"},
		{rules: "DEFAULT", cert: true, want: "User:CN=Alice,O=Acme"},
		{rules: "RULE:^CN=Bob,.*$/bob/", cert: true, refused: true},
		// ssl.client.auth=requested: a client without a certificate is anonymous.
		{rules: "DEFAULT", cert: false, want: security.Anonymous},
	} {
		mapper, err := security.ParsePrincipalMappingRules(c.rules)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			p  security.Principal
			ok bool
		}
		got := make(chan result, 1)
		go func() {
			sc, err := ln.Accept()
			if err != nil {
				got <- result{}
				return
			}
			defer sc.Close()
			conn, ok := s.startTLS(sc, Listener{Name: "SSL", TLS: r.ServerConfig(), Principals: mapper})
			if ok {
				got <- result{connPrincipal(conn), true}
				io.Copy(io.Discard, conn)
				return
			}
			got <- result{}
		}()
		cfg := &tls.Config{RootCAs: fx.pool, ServerName: "localhost"}
		if c.cert {
			cfg.Certificates = []tls.Certificate{fx.client}
		}
		cc, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		res := <-got
		cc.Close()
		if c.refused {
			if res.ok {
				t.Errorf("%q: a subject no rule maps was let in as %q", c.rules, res.p)
			}
			continue
		}
		if !res.ok || res.p != c.want {
			t.Errorf("%q (cert %v): principal %q (ok %v), want %q", c.rules, c.cert, res.p, res.ok, c.want)
		}
	}
	if st := s.TLSStats(); st.UnmappedPrincipals != 1 {
		t.Errorf("unmapped principals counted %d, want 1", st.UnmappedPrincipals)
	}
}

func TestRequiredClientAuthRefusesClientWithoutCertificate(t *testing.T) {
	fx := newTLSFixture(t)
	s, addr := serveTLS(t, fx, tlsconf.ClientAuthRequired, "")
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: fx.pool, ServerName: "localhost"})
	if err == nil {
		// In TLS 1.3 the server's refusal arrives after the client's handshake completes.
		err = apiVersionsOver(t, c)
		c.Close()
	}
	if err == nil {
		t.Fatal("a client without a certificate was served")
	}
	waitForStat(t, s, func(st TLSStats) bool { return st.HandshakeFailures == 1 })

	c, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: fx.pool, ServerName: "localhost", Certificates: []tls.Certificate{fx.client}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := apiVersionsOver(t, c); err != nil {
		t.Fatalf("a client with a certificate was not served: %v", err)
	}
}

func TestTLSListenerClosesPlaintextGarbageAndSilentClients(t *testing.T) {
	fx := newTLSFixture(t)
	old := tlsHandshakeTimeout
	tlsHandshakeTimeout = 300 * time.Millisecond
	defer func() { tlsHandshakeTimeout = old }()
	s, addr := serveTLS(t, fx, tlsconf.ClientAuthNone, "")

	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, c)
		return err == nil // EOF: the server closed it
	}
	// A Kafka client configured for PLAINTEXT: its ApiVersions request is not a TLS record.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	writeFrame(t, c, kmsg.NewPtrApiVersionsRequest(), 3, 1)
	if !closed(c) {
		t.Error("plaintext client not closed")
	}
	c.Close()
	waitForStat(t, s, func(st TLSStats) bool { return st.PlaintextClients == 1 })

	// A TLS record header followed by garbage.
	c, _ = net.Dial("tcp", addr)
	c.Write([]byte{0x16, 0x03, 0x01, 0x00, 0x20, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28})
	if !closed(c) {
		t.Error("garbage handshake not closed")
	}
	c.Close()

	// A client that connects and says nothing is closed at the handshake deadline.
	start := time.Now()
	c, _ = net.Dial("tcp", addr)
	if !closed(c) {
		t.Error("silent client not closed")
	}
	c.Close()
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("silent client held for %v", waited)
	}
	waitForStat(t, s, func(st TLSStats) bool { return st.HandshakeFailures == 3 && st.PlaintextClients == 1 })
}

// A TLS connection must never reach writeFileRange's sendfile path, which would write file
// bytes to the socket unencrypted: tlsConn must not expose the raw descriptor.
func TestTLSConnHidesTheSocketFromSendfile(t *testing.T) {
	var c net.Conn = &tlsConn{}
	if _, ok := c.(syscall.Conn); ok {
		t.Fatal("tlsConn implements syscall.Conn: fetch responses would be sent with sendfile, in plaintext")
	}
}
