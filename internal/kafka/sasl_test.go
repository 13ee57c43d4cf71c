package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/security"
)

// logBuffer is a slog sink the tests read while the server writes to it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// saslBroker is an in-process broker serving a SASL_PLAINTEXT listener, the one Metadata
// advertises, and a PLAINTEXT one.
type saslBroker struct {
	plainAddr, saslAddr string
	s                   *Server
	b                   *broker.Broker
	log                 *logBuffer
}

func startSASLBroker(t *testing.T, cfg *SASLConfig) *saslBroker {
	t.Helper()
	plainLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	saslLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	lg := slog.New(slog.NewTextHandler(logs, nil))
	b, err := broker.New(broker.Config{DataDir: t.TempDir(), KafkaAddr: saslLn.Addr().String(), Logger: lg,
		Listeners: []broker.ListenerAddr{{Name: "SASL_PLAINTEXT", Addr: saslLn.Addr().String()}, {Name: "PLAINTEXT", Addr: plainLn.Addr().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(b, lg, nil)
	if cfg != nil {
		if err := s.SetSASL(*cfg); err != nil {
			t.Fatal(err)
		}
	}
	go s.Serve(plainLn)
	go s.ServeListener(saslLn, Listener{Name: "SASL_PLAINTEXT", SASL: true})
	t.Cleanup(func() {
		s.Close()
		b.Close()
	})
	return &saslBroker{plainAddr: plainLn.Addr().String(), saslAddr: saslLn.Addr().String(), s: s, b: b, log: logs}
}

// addUser creates a user with both SCRAM credentials. (Through the broker: Metadata
// answers the SASL listener's address, so kadm on the PLAINTEXT one would be sent there.)
func (sb *saslBroker) addUser(t *testing.T, user, password string) {
	t.Helper()
	for _, m := range []string{security.ScramSHA256, security.ScramSHA512} {
		cred, err := security.DeriveScramCredential(m, user, password, 4096, []byte("salt-of-"+user))
		if err != nil {
			t.Fatal(err)
		}
		if err := sb.b.UpsertScramCredential(user, cred); err != nil {
			t.Fatal(err)
		}
	}
}

func (sb *saslBroker) client(t *testing.T, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(sb.saslAddr), kgo.SASL(m)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func plainAuth(user, pw string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: pw}.AsMechanism()
}

// franz-go produces and consumes over a SASL listener with each mechanism.
func TestSASLClientsProduceAndConsume(t *testing.T) {
	sb := startSASLBroker(t, nil)
	sb.addUser(t, "alice", "alice-secret")
	mechs := map[string]sasl.Mechanism{
		"PLAIN":         plainAuth("alice", "alice-secret"),
		"SCRAM-SHA-256": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
	}
	for name, m := range mechs {
		t.Run(name, func(t *testing.T) {
			topic := "t-" + strings.ToLower(name)
			cl := sb.client(t, m, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			produce(t, cl, topic, 0, 3)
			var got []string
			for len(got) < 3 {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatal(err)
				}
				fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			}
			if strings.Join(got, ",") != "0,1,2" {
				t.Fatalf("consumed %v", got)
			}
		})
	}
	if n := sb.s.AuthenticationFailures(); n != 0 {
		t.Fatalf("%d authentication failures", n)
	}
}

// A wrong password is answered SASL_AUTHENTICATION_FAILED, logged with the client's
// address and the reason but never the password, counted, and the connection closed.
func TestSASLWrongPassword(t *testing.T) {
	sb := startSASLBroker(t, nil)
	sb.addUser(t, "alice", "alice-secret")

	cl := sb.client(t, scram.Auth{User: "alice", Pass: "not-the-secret"}.AsSha512Mechanism(), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("ping with a wrong password: %v", err)
	}

	c := dialRaw(t, sb.saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	var hsResp kmsg.SASLHandshakeResponse
	roundTrip(t, c, hs, 1, &hsResp)
	if hsResp.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(hsResp.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00nobody\x00guess-pw")
	var authResp kmsg.SASLAuthenticateResponse
	roundTrip(t, c, auth, 1, &authResp)
	if authResp.ErrorCode != kerr.SaslAuthenticationFailed.Code || authResp.ErrorMessage == nil ||
		!strings.Contains(*authResp.ErrorMessage, "invalid username or password") {
		t.Fatalf("unknown user answered %v %v", kerr.ErrorForCode(authResp.ErrorCode), authResp.ErrorMessage)
	}
	expectClosed(t, c)

	if n := sb.s.AuthenticationFailures(); n != 2 {
		t.Fatalf("AuthenticationFailures = %d, want 2", n)
	}
	logs := sb.log.String()
	for _, want := range []string{`reason="wrong password"`, `reason="unknown user"`, "user=alice", "remote=127.0.0.1"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	for _, secret := range []string{"not-the-secret", "guess-pw"} {
		if strings.Contains(logs, secret) {
			t.Errorf("log shows the password %q", secret)
		}
	}
}

// A malformed exchange (out of order, oversized, a nonce that is not the server's) is
// answered SASL_AUTHENTICATION_FAILED saying what was wrong, and the connection closes.
func TestSASLMalformedExchange(t *testing.T) {
	sb := startSASLBroker(t, nil)
	sb.addUser(t, "alice", "alice-secret")
	for _, tc := range []struct {
		name     string
		messages []string
		want     string
	}{
		{"final first", []string{"c=biws,r=abc,p=AAAA"}, "client-final message sent before client-first"},
		{"oversized", []string{"n,,n=alice,r=" + strings.Repeat("x", 5000)}, "exceeds"},
		{"foreign nonce", []string{"n,,n=alice,r=abcdef", "c=biws,r=notserver,p=AAAA"}, "nonce"},
		{"token auth", []string{"n,,n=alice,r=abcdef,tokenauth=true"}, "delegation tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, sb.saslAddr)
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Mechanism = "SCRAM-SHA-256"
			var hsResp kmsg.SASLHandshakeResponse
			roundTrip(t, c, hs, 1, &hsResp)
			var resp kmsg.SASLAuthenticateResponse
			for _, m := range tc.messages {
				auth := kmsg.NewPtrSASLAuthenticateRequest()
				auth.SASLAuthBytes = []byte(m)
				roundTrip(t, c, auth, 2, &resp)
			}
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, tc.want) {
				t.Fatalf("answered %v %v, want a message with %q", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, tc.want)
			}
			expectClosed(t, c)
		})
	}
}

// A mechanism that is not enabled gets UNSUPPORTED_SASL_MECHANISM with the enabled ones,
// and the connection closes.
func TestSASLUnknownMechanism(t *testing.T) {
	sb := startSASLBroker(t, &SASLConfig{Mechanisms: []string{"SCRAM-SHA-512"}})
	sb.addUser(t, "alice", "alice-secret")

	cl := sb.client(t, plainAuth("alice", "alice-secret"), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("ping with PLAIN disabled: %v", err)
	}

	c := dialRaw(t, sb.saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "GSSAPI"
	var resp kmsg.SASLHandshakeResponse
	roundTrip(t, c, hs, 1, &resp)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "SCRAM-SHA-512" {
		t.Fatalf("GSSAPI answered %v, mechanisms %v", kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms)
	}
	expectClosed(t, c)

	if err := (&Server{}).SetSASL(SASLConfig{Mechanisms: []string{"GSSAPI"}}); err == nil || !strings.Contains(err.Error(), "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512") {
		t.Fatalf("SetSASL(GSSAPI) = %v", err)
	}
}

// Before authentication only ApiVersions and the SASL APIs are served: any other request
// closes the connection, as does one sent in the middle of an exchange, and an oversized
// frame.
func TestSASLRequestBeforeAuthenticationCloses(t *testing.T) {
	sb := startSASLBroker(t, nil)

	c := dialRaw(t, sb.saslAddr)
	var av kmsg.ApiVersionsResponse
	roundTrip(t, c, kmsg.NewPtrApiVersionsRequest(), 3, &av)
	versions := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		versions[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if versions[17] != [2]int16{0, 1} || versions[36] != [2]int16{0, 2} {
		t.Fatalf("ApiVersions advertises SaslHandshake %v, SaslAuthenticate %v", versions[17], versions[36])
	}
	writeRawFrame(t, c, frame(kmsg.NewPtrMetadataRequest(), 1))
	expectClosed(t, c)
	if !strings.Contains(sb.log.String(), "Metadata (key 3) received before SASL authentication") {
		t.Errorf("log:\n%s", sb.log.String())
	}

	c = dialRaw(t, sb.saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "SCRAM-SHA-256"
	var hsResp kmsg.SASLHandshakeResponse
	roundTrip(t, c, hs, 1, &hsResp)
	writeRawFrame(t, c, frame(kmsg.NewPtrApiVersionsRequest(), 3))
	expectClosed(t, c)

	c = dialRaw(t, sb.saslAddr)
	var auth kmsg.SASLAuthenticateResponse
	roundTrip(t, c, kmsg.NewPtrSASLAuthenticateRequest(), 1, &auth)
	if auth.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate before SaslHandshake: %v", kerr.ErrorForCode(auth.ErrorCode))
	}
	expectClosed(t, c)

	c = dialRaw(t, sb.saslAddr)
	big := binary.BigEndian.AppendUint32(nil, MaxPreAuthFrameBytes+1)
	if _, err := c.Write(big); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
}

// On a listener without SASL, SaslHandshake is answered ILLEGAL_SASL_STATE and the
// connection goes on.
func TestSASLHandshakeOnPlaintextListener(t *testing.T) {
	sb := startSASLBroker(t, nil)
	c := dialRaw(t, sb.plainAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	var resp kmsg.SASLHandshakeResponse
	roundTrip(t, c, hs, 1, &resp)
	if resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake on PLAINTEXT: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var meta kmsg.MetadataResponse
	roundTrip(t, c, kmsg.NewPtrMetadataRequest(), 1, &meta)
	if len(meta.Brokers) != 1 {
		t.Fatalf("metadata after the refused handshake: %+v", meta)
	}
}

// After a v0 handshake the mechanism's messages travel as bare frames, as sarama and old
// librdkafka send them; then the connection serves Kafka requests.
func TestSASLHandshakeV0RawTokens(t *testing.T) {
	sb := startSASLBroker(t, nil)
	sb.addUser(t, "alice", "alice-secret")

	c := dialRaw(t, sb.saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	var hsResp kmsg.SASLHandshakeResponse
	roundTrip(t, c, hs, 0, &hsResp)
	if hsResp.ErrorCode != 0 {
		t.Fatalf("handshake v0: %v", kerr.ErrorForCode(hsResp.ErrorCode))
	}
	writeRawFrame(t, c, []byte("\x00alice\x00alice-secret"))
	if reply := readRawFrame(t, c); len(reply) != 0 {
		t.Fatalf("PLAIN reply %q, want an empty frame", reply)
	}
	var meta kmsg.MetadataResponse
	roundTrip(t, c, kmsg.NewPtrMetadataRequest(), 1, &meta)
	if len(meta.Brokers) != 1 {
		t.Fatalf("metadata after v0 PLAIN: %+v", meta)
	}

	// SCRAM-SHA-512, client-first and client-final as bare frames.
	c = dialRaw(t, sb.saslAddr)
	hs.Mechanism = "SCRAM-SHA-512"
	roundTrip(t, c, hs, 0, &hsResp)
	conv := newSCRAMClient(t, xscram.SHA512, "alice", "alice-secret")
	first, _ := conv.Step("")
	writeRawFrame(t, c, []byte(first))
	final, err := conv.Step(string(readRawFrame(t, c)))
	if err != nil {
		t.Fatal(err)
	}
	writeRawFrame(t, c, []byte(final))
	if _, err := conv.Step(string(readRawFrame(t, c))); err != nil || !conv.Valid() {
		t.Fatalf("server-final: %v", err)
	}
	roundTrip(t, c, kmsg.NewPtrMetadataRequest(), 1, &meta)

	// A wrong password in this flow has no answer: the connection closes.
	c = dialRaw(t, sb.saslAddr)
	hs.Mechanism = "PLAIN"
	roundTrip(t, c, hs, 0, &hsResp)
	writeRawFrame(t, c, []byte("\x00alice\x00wrong"))
	expectClosed(t, c)
	if n := sb.s.AuthenticationFailures(); n != 1 {
		t.Fatalf("AuthenticationFailures = %d", n)
	}
}

// KIP-368: franz-go re-authenticates before the session lifetime the server gives runs
// out, and its requests keep succeeding on the same connections.
func TestSASLReauthenticationWithFranzGo(t *testing.T) {
	sb := startSASLBroker(t, &SASLConfig{Mechanisms: []string{"SCRAM-SHA-256"}, SessionLifetime: 1500 * time.Millisecond})
	sb.addUser(t, "alice", "alice-secret")
	cl := sb.client(t, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), kgo.DefaultProduceTopic("reauth"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "reauth"); err != nil {
		t.Fatal(err)
	}
	n := 0
	for sb.s.sasl.reauths.Load() < 2 {
		if ctx.Err() != nil {
			t.Fatalf("no re-authentication after %d produces", n)
		}
		produce(t, cl, "reauth", n, 1)
		n++
	}
	if f := sb.s.AuthenticationFailures(); f != 0 {
		t.Fatalf("%d authentication failures", f)
	}
	if strings.Contains(sb.log.String(), "session expired") {
		t.Fatalf("a connection outlived its session:\n%s", sb.log.String())
	}
}

// A connection whose session expired is closed at its next request; a re-authentication
// as another user, or with another mechanism, is refused and closes the connection.
func TestSASLSessionExpiryAndPrincipalChange(t *testing.T) {
	sb := startSASLBroker(t, &SASLConfig{Mechanisms: []string{"PLAIN", "SCRAM-SHA-256"}, SessionLifetime: time.Minute})
	sb.addUser(t, "alice", "alice-secret")
	sb.addUser(t, "bob", "bob-secret")

	authenticateWith := func(c net.Conn, mech, msg string) kmsg.SASLAuthenticateResponse {
		t.Helper()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = mech
		var hsResp kmsg.SASLHandshakeResponse
		roundTrip(t, c, hs, 1, &hsResp)
		if hsResp.ErrorCode != 0 {
			t.Fatalf("handshake %s: %v", mech, kerr.ErrorForCode(hsResp.ErrorCode))
		}
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = []byte(msg)
		var resp kmsg.SASLAuthenticateResponse
		roundTrip(t, c, auth, 1, &resp)
		return resp
	}
	authenticate := func(c net.Conn, user, pw string) kmsg.SASLAuthenticateResponse {
		t.Helper()
		return authenticateWith(c, "PLAIN", "\x00"+user+"\x00"+pw)
	}

	c := dialRaw(t, sb.saslAddr)
	resp := authenticate(c, "alice", "alice-secret")
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis < 59000 || resp.SessionLifetimeMillis > 60000 {
		t.Fatalf("authenticate: %v, lifetime %d", kerr.ErrorForCode(resp.ErrorCode), resp.SessionLifetimeMillis)
	}
	// Re-authenticating as the same user within the session is served.
	if resp := authenticate(c, "alice", "alice-secret"); resp.ErrorCode != 0 {
		t.Fatalf("re-authenticate: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var meta kmsg.MetadataResponse
	roundTrip(t, c, kmsg.NewPtrMetadataRequest(), 1, &meta) // within the session
	sb.s.sasl.clockOffset.Store(int64(time.Minute))         // the session has ended
	writeRawFrame(t, c, frame(kmsg.NewPtrMetadataRequest(), 1))
	expectClosed(t, c)
	if !strings.Contains(sb.log.String(), "after the SASL session expired") {
		t.Errorf("log:\n%s", sb.log.String())
	}

	c = dialRaw(t, sb.saslAddr)
	authenticate(c, "alice", "alice-secret")
	resp = authenticate(c, "bob", "bob-secret")
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "cannot change principals") {
		t.Fatalf("re-authentication as bob: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	expectClosed(t, c)

	c = dialRaw(t, sb.saslAddr)
	authenticate(c, "alice", "alice-secret")
	resp = authenticateWith(c, "SCRAM-SHA-256", "n,,n=alice,r=abcdef")
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "not supported for re-authentication") {
		t.Fatalf("re-authentication with SCRAM-SHA-256: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	expectClosed(t, c)
}

func newSCRAMClient(t *testing.T, h xscram.HashGeneratorFcn, user, pw string) *xscram.ClientConversation {
	t.Helper()
	cl, err := h.NewClient(user, pw, "")
	if err != nil {
		t.Fatal(err)
	}
	return cl.NewConversation()
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

func writeRawFrame(t *testing.T, c net.Conn, body []byte) {
	t.Helper()
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		t.Fatal(err)
	}
}

func readRawFrame(t *testing.T, c net.Conn) []byte {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	return body
}

// roundTrip sends req at version and decodes the response into resp.
func roundTrip(t *testing.T, c net.Conn, req kmsg.Request, version int16, resp kmsg.Response) {
	t.Helper()
	writeRawFrame(t, c, frame(req, version))
	body := readRawFrame(t, c)
	if len(body) < 4 || binary.BigEndian.Uint32(body) != 7 {
		t.Fatalf("response %x has not the request's correlation id", body)
	}
	body = body[4:]
	resp.SetVersion(version)
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %s: %v", kmsg.NameForKey(resp.Key()), err)
	}
}

// expectClosed waits for the server to close c, failing on any byte it sends first.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	var b [1]byte
	n, err := c.Read(b[:])
	if n != 0 || err == nil {
		t.Fatalf("connection still open: read %d bytes, err %v", n, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection still open after 20s")
	}
}

// principalTable allows everything to its one principal and nothing to anyone else.
type principalTable struct{ allowed security.Principal }

func (p principalTable) AuthorizationEnabled() bool { return true }

func (p principalTable) Authorize(who security.Principal, _ string, _ kmsg.ACLOperation, _ kmsg.ACLResourceType, _ string) bool {
	return who == p.allowed
}

// The principal a connection authenticated as is the one its requests are authorized as.
func TestSASLPrincipalIsAuthorized(t *testing.T) {
	sb := startSASLBroker(t, nil)
	sb.addUser(t, "alice", "alice-secret")
	sb.addUser(t, "bob", "bob-secret")
	if _, err := sb.b.CreateTopic("owned", 1, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	sb.s.SetAuthorizer(principalTable{allowed: security.UserPrincipal("alice")})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	alice := sb.client(t, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	produce(t, alice, "owned", 0, 1)

	bob := sb.client(t, scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(), kgo.RequestRetries(0))
	err := bob.ProduceSync(ctx, &kgo.Record{Topic: "owned", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob's produce: %v", err)
	}
}
