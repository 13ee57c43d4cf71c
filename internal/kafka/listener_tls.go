package kafka

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-io/cairn/internal/security"
)

// tlsHandshakeTimeout (a variable for tests) bounds the handshake of a TLS listener's connection, so a client that
// connects and sends nothing (or a byte a minute) holds its goroutine no longer.
var tlsHandshakeTimeout = 10 * time.Second

// TLSStats counts the connections a TLS listener closed before serving a request.
type TLSStats struct {
	// HandshakeFailures is every failed handshake, those below included: a bad or missing
	// client certificate, a protocol below TLS 1.2, garbage, a client that went silent.
	HandshakeFailures uint64
	// PlaintextClients is the connections whose first bytes were not a TLS record: a
	// client configured for PLAINTEXT on an SSL port.
	PlaintextClients uint64
	// UnmappedPrincipals is the verified client certificates that no
	// ssl.principal.mapping.rules rule applied to.
	UnmappedPrincipals uint64
}

type tlsCounters struct {
	handshakeFailures, plaintextClients, unmapped atomic.Uint64
	logged                                        logEvery
}

// TLSStats returns the TLS listeners' refusal counters.
func (s *Server) TLSStats() TLSStats {
	return TLSStats{HandshakeFailures: s.tls.handshakeFailures.Load(), PlaintextClients: s.tls.plaintextClients.Load(),
		UnmappedPrincipals: s.tls.unmapped.Load()}
}

// tlsConn is a served TLS connection and the principal its certificate maps to. Its Close
// closes the socket at once: tls.Conn.Close first writes a close_notify alert, which can
// block on a client that stopped reading, and Kafka clients do not wait for one.
type tlsConn struct {
	*tls.Conn
	raw       net.Conn
	principal security.Principal
}

func (c *tlsConn) Close() error { return c.raw.Close() }

// connPrincipal is who a new connection is before any SASL exchange: the mapped subject of
// its verified client certificate, or User:ANONYMOUS.
func connPrincipal(c net.Conn) security.Principal {
	if tc, ok := c.(*tlsConn); ok {
		return tc.principal
	}
	return security.Anonymous
}

// startTLS runs the server side of the handshake on c when l is a TLS listener, and maps the
// client's certificate to a principal. It returns c itself for a plaintext listener, and
// false when the connection is to be closed (which the caller does).
func (s *Server) startTLS(c net.Conn, l Listener) (net.Conn, bool) {
	if l.TLS == nil {
		return c, true
	}
	c.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	tc := tls.Server(c, l.TLS)
	// Close closes c (it is in s.conns), which ends a handshake under way at once.
	if err := tc.Handshake(); err != nil {
		select {
		case <-s.done:
			return nil, false // shutting down: not the client's failure
		default:
		}
		s.tls.handshakeFailures.Add(1)
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) {
			s.tls.plaintextClients.Add(1)
			err = errors.New("the client's first bytes are not a TLS record: a client configured for PLAINTEXT on a TLS listener (set security.protocol=SSL on the client)")
		}
		s.tls.logged.warn(s, "closing connection: TLS handshake failed", "listener", l.Name, "remote", c.RemoteAddr(), "err", err)
		return nil, false
	}
	c.SetDeadline(time.Time{})
	principal := security.Anonymous
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		// The handshake verified the chain against the truststore; only its name is left.
		mapper := l.Principals
		if mapper == nil {
			mapper, _ = security.ParsePrincipalMappingRules("")
		}
		p, err := mapper.Principal(certs[0])
		if err != nil {
			s.tls.unmapped.Add(1)
			s.tls.logged.warn(s, "closing connection: client certificate names no principal", "listener", l.Name, "remote", c.RemoteAddr(), "err", err)
			return nil, false
		}
		principal = p
	}
	return &tlsConn{Conn: tc, raw: c, principal: principal}, true
}

// logEvery bounds how often refused connections are logged (a port scanner, or a client
// redialling with the wrong protocol, must not flood the log); each is counted regardless.
type logEvery struct {
	mu         sync.Mutex
	next       time.Time
	suppressed int
}

func (l *logEvery) warn(s *Server, msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	if now.Before(l.next) {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.next = now.Add(10 * time.Second)
	if l.suppressed > 0 {
		args = append(args, "suppressed_since_last", l.suppressed)
		l.suppressed = 0
	}
	l.mu.Unlock()
	s.lg.Warn(msg, args...)
}
