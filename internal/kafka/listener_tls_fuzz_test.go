package kafka

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/security"
	"github.com/cairn-io/cairn/internal/tlsconf"
)

// bytesConn is a connection whose peer sent in and then went quiet: reads return in, then
// EOF; writes are dropped.
type bytesConn struct {
	r *bytes.Reader
}

func (c *bytesConn) Read(p []byte) (int, error) {
	if c.r.Len() == 0 {
		return 0, io.EOF
	}
	return c.r.Read(p)
}
func (c *bytesConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *bytesConn) Close() error                { return nil }
func (c *bytesConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9094} }
func (c *bytesConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *bytesConn) SetDeadline(time.Time) error      { return nil }
func (c *bytesConn) SetReadDeadline(time.Time) error  { return nil }
func (c *bytesConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzTLSListenerAccept: whatever bytes a client sends to an SSL listener requiring client
// certificates (garbage, a plaintext Kafka frame, a truncated or forged ClientHello), the
// handshake fails without a panic and the connection is refused, counted as a failure.
func FuzzTLSListenerAccept(f *testing.F) {
	fx := newTLSFixture(f)
	r, err := tlsconf.New(tlsconf.Files{Cert: fx.server.CertFile, Key: fx.server.KeyFile, CA: fx.ca.CertFile, ClientAuth: tlsconf.ClientAuthRequired})
	if err != nil {
		f.Fatal(err)
	}
	mapper, err := security.ParsePrincipalMappingRules("DEFAULT")
	if err != nil {
		f.Fatal(err)
	}
	s := newTestServer(f)
	l := Listener{Name: "SSL", TLS: r.ServerConfig(), Principals: mapper}
	f.Add([]byte{0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0}) // an ApiVersions frame in plaintext
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00})
	f.Add([]byte{0x16, 0x03, 0x03, 0xff, 0xff})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		before := s.TLSStats().HandshakeFailures
		if _, ok := s.startTLS(&bytesConn{r: bytes.NewReader(in)}, l); ok {
			t.Fatalf("a connection that sent %x was accepted", in)
		}
		if s.TLSStats().HandshakeFailures != before+1 {
			t.Fatal("a failed handshake was not counted")
		}
	})
}
