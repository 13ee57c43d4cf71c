package kafka

import (
	"context"
	"crypto/tls"
	"sync"

	"github.com/cairn-io/cairn/internal/security"
)

// Listener is one Kafka listener as the server serves it: its name (the one `listeners`
// and `advertised.listeners` use, which Metadata answers for) and what a connection on it
// must go through before its requests are served.
type Listener struct {
	// Name is the listener's name, e.g. "PLAINTEXT" or "INTERNAL".
	Name string
	// SASL is set for SASL_PLAINTEXT and SASL_SSL listeners: a client must authenticate
	// before any request other than ApiVersions and the SASL APIs is served.
	SASL bool
	// TLS, when set, makes each connection start with a TLS handshake under this
	// configuration (SSL and SASL_SSL listeners); it decides whether a client certificate
	// is asked for and verifies it.
	TLS *tls.Config
	// Principals maps a verified client certificate to the connection's principal
	// (ssl.principal.mapping.rules); nil is DEFAULT, the subject unchanged.
	Principals *security.PrincipalMapper
}

// session is what the server knows about one connection: the listener it came in on and
// who it is. The reader goroutine changes it (a SASL exchange); handlers read it.
type session struct {
	listener Listener
	sasl     saslConn // the reader goroutine's alone (sasl.go)

	mu        sync.Mutex
	principal security.Principal
}

type sessionKey struct{}

func withSession(ctx context.Context, s *session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// sessionOf returns the connection's session, or nil outside a connection (unit tests
// that call a handler directly).
func sessionOf(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// principalOf is who sent the request: the SASL user, the mapped certificate subject, or
// User:ANONYMOUS.
func principalOf(ctx context.Context) security.Principal {
	s := sessionOf(ctx)
	if s == nil {
		return security.Anonymous
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.principal
}

// listenerOf is the name of the listener the request came in on ("" outside a connection).
func listenerOf(ctx context.Context) string {
	if s := sessionOf(ctx); s != nil {
		return s.listener.Name
	}
	return ""
}
