package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// SASL on the Kafka protocol: SaslHandshake (17) picks a mechanism, then the mechanism's
// messages travel in SaslAuthenticate (36) requests, or, after a v0 handshake, as bare
// length-prefixed frames without a Kafka header (the flow before KIP-152, which sarama and
// old librdkafka still use). The exchanges themselves are internal/security's. A
// connection on a SASL listener is served nothing but ApiVersions and these two APIs until
// it has authenticated; a failure is answered, logged, counted, and the connection closed.
//
// KIP-368: with connections.max.reauth.ms set, a session lasts that long. The client
// authenticates again on the same connection (SaslHandshake v1+, then SaslAuthenticate),
// as the same principal; a connection whose session ran out is closed at its next other
// request, as Kafka does.

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// MaxPreAuthFrameBytes is the largest frame a connection may send before it has
// authenticated (Kafka's sasl.server.max.receive.size), so that a client nobody knows
// cannot make the server hold 100 MiB frames.
const MaxPreAuthFrameBytes = 512 << 10

// SASLConfig is how SASL listeners authenticate.
type SASLConfig struct {
	// Mechanisms are the mechanisms offered, as SaslHandshake lists them.
	Mechanisms []string
	// SessionLifetime is connections.max.reauth.ms; 0 lets a session last as long as
	// its connection.
	SessionLifetime time.Duration
}

// defaultSASLConfig serves every mechanism internal/security has, without re-authentication.
func defaultSASLConfig() SASLConfig { return SASLConfig{Mechanisms: security.Mechanisms()} }

// saslServer is the server's SASL configuration and counters.
type saslServer struct {
	cfg      atomic.Pointer[SASLConfig]
	failures atomic.Int64
	reauths  atomic.Int64 // successful re-authentications, for tests
	// clockOffset moves the clock sessions expire by, so a test can end one without
	// waiting for it.
	clockOffset atomic.Int64
}

func (s *Server) saslNow() time.Time {
	return time.Now().Add(time.Duration(s.sasl.clockOffset.Load()))
}

// SetSASL sets the mechanisms and session lifetime of the server's SASL listeners. A
// mechanism internal/security does not serve is refused, naming the ones it does.
func (s *Server) SetSASL(cfg SASLConfig) error {
	if len(cfg.Mechanisms) == 0 {
		return errors.New("sasl: no mechanism enabled")
	}
	for _, m := range cfg.Mechanisms {
		if !slices.Contains(security.Mechanisms(), m) {
			return fmt.Errorf("sasl: mechanism %q is not served (%s)", m, strings.Join(security.Mechanisms(), ", "))
		}
	}
	if cfg.SessionLifetime < 0 {
		return errors.New("sasl: negative session lifetime")
	}
	cfg.Mechanisms = slices.Clone(cfg.Mechanisms)
	s.sasl.cfg.Store(&cfg)
	return nil
}

func (s *Server) saslConfig() SASLConfig {
	if p := s.sasl.cfg.Load(); p != nil {
		return *p
	}
	return defaultSASLConfig()
}

// AuthenticationFailures counts SASL authentications that failed (wrong password, unknown
// user, malformed exchange), for metrics.
func (s *Server) AuthenticationFailures() int64 { return s.sasl.failures.Load() }

// saslConn is one connection's SASL progress. Only the connection's reader goroutine
// touches it (handlers run there, in request order), so it needs no lock; the principal
// it sets lives in the session, under the session's lock, because handlers' responders
// read it from the writer.
type saslConn struct {
	exchange      security.Exchange // the exchange under way, nil between exchanges
	raw           bool              // the exchange's messages are bare frames (v0 handshake)
	authenticated bool              // the connection has authenticated at least once
	mechanism     string            // of the last successful authentication
	expires       time.Time         // end of the session; zero when it does not end
	closing       bool              // the response being built is the connection's last
}

// frameBounds are the sizes a frame of this connection may have: a bare SASL token may be
// shorter than a request header, and before authentication a frame is held to Kafka's
// SASL receive limit.
func (sess *session) frameBounds() (lo, hi int32) {
	lo, hi = 8, MaxFrameBytes
	if !sess.listener.SASL || sess.sasl.authenticated {
		return lo, hi
	}
	if sess.sasl.raw {
		lo = 0
	}
	return lo, MaxPreAuthFrameBytes
}

// admit decides whether a request may be served on this connection now. An error closes
// the connection, as Kafka closes it: a client that sends other requests before it has
// authenticated, or after its session has ended, is either broken or probing.
func (sess *session) admit(hdr requestHeader, now time.Time) error {
	if sess == nil || !sess.listener.SASL {
		return nil
	}
	st := &sess.sasl
	name := kmsg.NameForKey(hdr.apiKey)
	switch {
	case st.exchange != nil:
		if hdr.apiKey != saslAuthenticateKey {
			return fmt.Errorf("%s (key %d) received during a SASL %s exchange: only SaslAuthenticate is served until it ends", name, hdr.apiKey, st.exchange.Mechanism())
		}
	case !st.authenticated:
		if hdr.apiKey != apiVersionsKey && hdr.apiKey != saslHandshakeKey && hdr.apiKey != saslAuthenticateKey {
			return fmt.Errorf("%s (key %d) received before SASL authentication: only ApiVersions, SaslHandshake and SaslAuthenticate are served until the client authenticates", name, hdr.apiKey)
		}
	case !st.expires.IsZero() && !now.Before(st.expires):
		if hdr.apiKey != saslHandshakeKey && hdr.apiKey != saslAuthenticateKey {
			return fmt.Errorf("%s (key %d) received after the SASL session expired at %s: the client did not re-authenticate (connections.max.reauth.ms)", name, hdr.apiKey, st.expires.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

func handleSASLHandshake(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	cfg := s.saslConfig()
	resp.SupportedMechanisms = cfg.Mechanisms
	answer := func(context.Context) kmsg.Response { return resp }
	sess := sessionOf(ctx)
	if sess == nil || !sess.listener.SASL {
		// As Kafka answers on a listener that does not authenticate: the client is
		// configured for SASL against the wrong port, and the code tells it so.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return answer
	}
	st := &sess.sasl
	switch {
	case st.authenticated && req.Version == 0:
		// Re-authentication (KIP-368) only exists in the SaslAuthenticate flow.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		st.closing = true
		s.lg.Warn("closing connection: SaslHandshake v0 on an authenticated connection", "remote", hostOf(ctx), "principal", string(principalOf(ctx)))
	case !slices.Contains(cfg.Mechanisms, req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		st.closing = true
		s.sasl.failures.Add(1)
		s.lg.Warn("SASL authentication failed", "remote", hostOf(ctx), "mechanism", req.Mechanism,
			"reason", "mechanism not enabled (sasl.enabled.mechanisms: "+strings.Join(cfg.Mechanisms, ",")+")")
	default:
		ex, err := security.NewExchange(req.Mechanism, s.b)
		if err != nil { // not reached: SetSASL admits only served mechanisms
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			st.closing = true
			break
		}
		st.exchange, st.raw = ex, req.Version == 0
	}
	return answer
}

func handleSASLAuthenticate(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	answer := func(context.Context) kmsg.Response { return resp }
	sess := sessionOf(ctx)
	if sess == nil || !sess.listener.SASL || sess.sasl.exchange == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		switch {
		case sess == nil || !sess.listener.SASL:
			resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate on a listener without SASL")
		case sess.sasl.authenticated:
			resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate without a SaslHandshake: the connection is already authenticated")
		default:
			resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate before SaslHandshake")
			sess.sasl.closing = true
			s.lg.Warn("closing connection: SaslAuthenticate before SaslHandshake", "remote", hostOf(ctx))
		}
		return answer
	}
	reply, err := s.saslStep(ctx, sess, req.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return answer
	}
	resp.SASLAuthBytes = reply
	if sess.sasl.exchange == nil && !sess.sasl.expires.IsZero() {
		resp.SessionLifetimeMillis = max(1, sess.sasl.expires.Sub(s.saslNow()).Milliseconds())
	}
	return answer
}

// handleRawSASLToken serves one bare SASL message after a v0 handshake: the reply goes
// back as a bare frame, even when empty (PLAIN's), since the client waits for it. A
// failure has no way to be told in this flow: the connection closes, as in Kafka.
func (s *Server) handleRawSASLToken(ctx context.Context, sess *session, frame []byte, start time.Time) *pending {
	slot := &pending{hdr: requestHeader{apiKey: saslAuthenticateKey}, start: start, inBytes: len(frame) + 4, raw: true}
	reply, err := s.saslStep(ctx, sess, frame)
	if err != nil {
		slot.close = true
		return slot
	}
	slot.respond = func(context.Context) kmsg.Response {
		return rawSASLToken{SASLAuthenticateResponse: kmsg.NewPtrSASLAuthenticateResponse(), token: reply}
	}
	return slot
}

// saslStep feeds one client message to the connection's exchange. When the exchange
// succeeds the connection takes its principal (a re-authentication must keep the one it
// had) and a new session starts. When it fails the failure is logged and counted, the
// connection is marked to close after the answer, and the error is what the client is
// told: the same for a wrong password and an unknown user.
func (s *Server) saslStep(ctx context.Context, sess *session, msg []byte) ([]byte, error) {
	st := &sess.sasl
	ex := st.exchange
	var reply []byte
	var err error
	if st.authenticated && ex.Mechanism() != st.mechanism {
		// As in Kafka: the handshake is answered, and the re-authentication fails here.
		err = fmt.Errorf("SASL mechanism %s is not supported for re-authentication of a connection authenticated with %s", ex.Mechanism(), st.mechanism)
	} else {
		reply, err = ex.Step(msg)
	}
	if err == nil && ex.Done() && st.authenticated && ex.Principal() != principalOf(ctx) {
		err = fmt.Errorf("re-authentication as %s refused: the connection is authenticated as %s, and a connection cannot change principals", ex.Principal(), principalOf(ctx))
	}
	if err != nil {
		st.exchange, st.raw, st.closing = nil, false, true
		s.sasl.failures.Add(1)
		reason := err.Error()
		var ae *security.AuthError
		if errors.As(err, &ae) {
			reason = ae.Reason
		}
		s.lg.Warn("SASL authentication failed", "remote", hostOf(ctx), "mechanism", ex.Mechanism(), "user", ex.User(), "reason", reason)
		return nil, err
	}
	if !ex.Done() {
		return reply, nil
	}
	if st.authenticated {
		s.sasl.reauths.Add(1)
	}
	st.exchange, st.raw, st.authenticated, st.mechanism = nil, false, true, ex.Mechanism()
	st.expires = time.Time{}
	if d := s.saslConfig().SessionLifetime; d > 0 {
		st.expires = s.saslNow().Add(d)
	}
	sess.mu.Lock()
	sess.principal = ex.Principal()
	sess.mu.Unlock()
	s.lg.Debug("SASL authenticated", "remote", hostOf(ctx), "mechanism", ex.Mechanism(), "principal", string(ex.Principal()))
	return reply, nil
}

// rawSASLToken is a bare SASL message as the v0 flow sends it (writeLoop writes no
// response header for a raw slot). It passes for a SaslAuthenticate response, so that
// whatever asks a response its key or version gets a true answer; only its encoding
// differs.
type rawSASLToken struct {
	*kmsg.SASLAuthenticateResponse
	token []byte
}

func (r rawSASLToken) AppendTo(b []byte) []byte { return append(b, r.token...) }
