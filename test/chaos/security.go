package main

// --security sasl_ssl: the session's cluster with every security feature on. Each broker
// serves SASL_SSL (SCRAM-SHA-512 only) beside PLAINTEXT, with the inter-broker transport
// under mutual TLS (the link proxies end and redial it, see test/chaos/faults), SCRAM users
// and ACLs in the controller's log and authorization on. Every client of the session (the
// producers, the consumers, the final read, the move and recover faults' kadm) connects
// to SASL_SSL as a user of its own. PLAINTEXT stays for the harness's readiness checks
// alone: they are User:ANONYMOUS, which no ACL names, and ask for broker lists only.
//
// Credentials and ACLs are replicated state, so no fault may make a broker refuse a
// client they allow: every authentication or authorization error a client sees is
// counted (authWatch) and fails the session, whatever the history checker finds.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
	"github.com/cairn-io/cairn/test/chaos/faults"
	"github.com/cairn-io/cairn/test/harness"
)

const (
	saslListener = "SASL_SSL"
	// The session's users: the admin (the only super user) sets up and runs the move and
	// recover faults, the writer produces, the reader consumes and reads back.
	adminUser  = "chaos-admin"
	writerUser = "chaos-writer"
	readerUser = "chaos-reader"
	// setUpTimeout bounds each wait for every broker to apply the users or the ACLs.
	setUpTimeout = 60 * time.Second
)

// security is a session's --security sasl_ssl material; a nil *security is the plaintext
// session of old, whose clients all come from Cluster.Client.
type security struct {
	kafkaCA   *tlstest.CA
	rpcCA     *tlstest.CA
	listener  tlstest.Leaf
	clientTLS *tls.Config
	passwords map[string]string
	watch     authWatch
	// txnIDs, when set (--mode txn), is the prefix of the transactional IDs the writer
	// may use: authorize gives it WRITE (which implies DESCRIBE) on them.
	txnIDs string
}

// newSecurity makes the CAs and certificates of a sasl_ssl session in dir: one CA for
// the Kafka listeners and their clients, another that names the cluster for the
// inter-broker transport (as docs/operations.md advises).
func newSecurity(dir string) (*security, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &security{passwords: map[string]string{}}
	var err error
	if s.kafkaCA, err = tlstest.NewCA(dir, "chaos-kafka"); err != nil {
		return nil, err
	}
	if s.rpcCA, err = tlstest.NewCA(dir, "chaos-rpc"); err != nil {
		return nil, err
	}
	if s.listener, err = s.kafkaCA.Issue(pkix.Name{CommonName: "localhost"}); err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(s.kafkaCA.CertFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", s.kafkaCA.CertFile)
	}
	s.clientTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	for _, u := range []string{adminUser, writerUser, readerUser} {
		s.passwords[u] = fmt.Sprintf("%s-secret-%d", u, time.Now().UnixNano())
	}
	return s, nil
}

// apply sets what the brokers need of s in opts. The harness keeps it for every restart.
func (s *security) apply(opts *faults.Options) {
	opts.Listeners = append(opts.Listeners, harness.Listener{Name: saslListener, Protocol: "SASL_SSL"})
	opts.TLS = harness.TLSFiles{Cert: s.listener.CertFile, Key: s.listener.KeyFile}
	opts.RPCTLS = s.rpcCA
	opts.Args = append(opts.Args, "--sasl-enabled-mechanisms", "SCRAM-SHA-512", "--admin-auth", "basic")
	opts.AdminHTTP = s.adminHTTP(2 * time.Second)
}

// client returns a client of the session as user (over SASL_SSL when s is set), watched
// for authentication and authorization errors.
func (s *security) client(cl *faults.Cluster, user string, opts ...kgo.Opt) (*kgo.Client, error) {
	if s == nil {
		return cl.Client(opts...)
	}
	return cl.Client(append(s.clientOpts(cl.ListenerAddrs(saslListener), user, true), opts...)...)
}

func (s *security) clientOpts(seeds []string, user string, watched bool) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(s.clientTLS.Clone()),
		kgo.SASL(scram.Auth{User: user, Pass: s.passwords[user]}.AsSha512Mechanism())}
	if watched {
		opts = append(opts, kgo.WithLogger(watchLogger{w: &s.watch, user: user}), kgo.WithHooks(watchHook{w: &s.watch, user: user}))
	}
	return opts
}

// createUsers makes the session's users through the Kafka API on the PLAINTEXT listener,
// the documented way to the first users: no one can log in before they exist, and
// authorization is not on yet. It waits until every broker authenticates each of them.
func (s *security) createUsers(ctx context.Context, cl *faults.Cluster) error {
	kc, err := cl.Client()
	if err != nil {
		return err
	}
	defer kc.Close()
	var upserts []kadm.UpsertSCRAM
	for _, u := range []string{adminUser, writerUser, readerUser} {
		upserts = append(upserts, kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: s.passwords[u]})
	}
	if err := until(ctx, "creating the users", func() error {
		res, err := kadm.NewClient(kc).AlterUserSCRAMs(ctx, nil, upserts)
		if err == nil {
			err = res.Error()
		}
		return err
	}); err != nil {
		return err
	}
	return s.onEveryBroker(ctx, cl, "authenticating every user", func(b *faults.Broker) error {
		for _, u := range []string{adminUser, writerUser, readerUser} {
			if _, err := s.metadataAt(ctx, b.ListenerAddrs[saslListener], u); err != nil {
				return fmt.Errorf("%s: %w", u, err)
			}
		}
		return nil
	})
}

// adminHTTP is a client of the brokers' admin APIs as the admin user (admin.auth=basic);
// a refusal (401, 403) is an authentication or authorization error like any other. With
// s nil it is a plain client.
func (s *security) adminHTTP(timeout time.Duration) *http.Client {
	if s == nil {
		return &http.Client{Timeout: timeout}
	}
	return &http.Client{Timeout: timeout, Transport: adminAuth{s: s, next: http.DefaultTransport}}
}

// adminAuth authenticates each admin API request as the admin user and watches the
// answers.
type adminAuth struct {
	s    *security
	next http.RoundTripper
}

func (a adminAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.SetBasicAuth(adminUser, a.s.passwords[adminUser])
	resp, err := a.next.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		a.s.watch.note(adminUser, "admin API "+req.Method+" "+req.URL.Path, fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	return resp, err
}

// authorize gives the writer WRITE (which implies DESCRIBE, and lets an idempotent
// producer init, KIP-679) and the reader READ on the session's topic (and, in a txn session,
// the writer WRITE on the transactional IDs it uses), makes the admin the
// only super user and turns authorization on. It waits until every broker refuses an
// anonymous client the topic and lets the writer and the reader see it, so no client of
// the workload can meet a broker that has not applied it all.
func (s *security) authorize(ctx context.Context, cl *faults.Cluster) error {
	kc, err := s.client(cl, adminUser)
	if err != nil {
		return err
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:" + writerUser).AllowHosts("*").Topics(topic).Operations(kadm.OpWrite),
		kadm.NewACLs().Allow("User:" + readerUser).AllowHosts("*").Topics(topic).Operations(kadm.OpRead),
	}
	for _, b := range acls {
		b.ResourcePatternType(kadm.ACLPatternLiteral)
	}
	if s.txnIDs != "" {
		acls = append(acls, kadm.NewACLs().Allow("User:"+writerUser).AllowHosts("*").TransactionalIDs(s.txnIDs).
			Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
	}
	for _, b := range acls {
		res, err := adm.CreateACLs(ctx, b)
		if err == nil {
			for _, r := range res {
				if r.Err != nil {
					err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("creating ACLs: %w", err)
		}
	}
	if err := setClusterConfig(ctx, adm, "super.users", "User:"+adminUser); err != nil {
		return err
	}
	if err := setClusterConfig(ctx, adm, "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"); err != nil {
		return err
	}
	return s.onEveryBroker(ctx, cl, "applying the ACLs and the authorizer", func(b *faults.Broker) error {
		if code, err := s.metadataAt(ctx, b.KafkaAddr, ""); err != nil || code != kerr.TopicAuthorizationFailed.Code {
			return fmt.Errorf("an anonymous client's metadata of %s: error code %d (%v), want TOPIC_AUTHORIZATION_FAILED", topic, code, err)
		}
		for _, u := range []string{writerUser, readerUser} {
			if code, err := s.metadataAt(ctx, b.ListenerAddrs[saslListener], u); err != nil || code != 0 {
				return fmt.Errorf("%s's metadata of %s: error code %d (%v)", u, topic, code, err)
			}
		}
		return nil
	})
}

// metadataAt asks the broker at addr alone (a fresh client's first request goes to its
// seed) for the topic's metadata, as user over SASL_SSL or, with no user, anonymously
// over PLAINTEXT, unwatched: set-up waits for refusals to end. It returns the topic's
// error code.
func (s *security) metadataAt(ctx context.Context, addr, user string) (int16, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("cairn-chaos-setup")}
	if user != "" {
		opts = append(opts, s.clientOpts([]string{addr}, user, false)...)
	}
	kc, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer kc.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false // the topic is created with its configs later
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, kc)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 {
		return 0, fmt.Errorf("metadata names %d topics", len(resp.Topics))
	}
	return resp.Topics[0].ErrorCode, nil
}

// onEveryBroker retries check on each broker until it passes, within setUpTimeout.
func (s *security) onEveryBroker(ctx context.Context, cl *faults.Cluster, what string, check func(*faults.Broker) error) error {
	for id := 1; id <= cl.N(); id++ {
		b := cl.Broker(id)
		if err := until(ctx, fmt.Sprintf("%s on broker %d", what, id), func() error { return check(b) }); err != nil {
			return err
		}
	}
	return nil
}

// until calls f until it returns nil, every 200 ms, within setUpTimeout.
func until(ctx context.Context, what string, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, setUpTimeout)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %v: %w", what, setUpTimeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// authWatch collects the authentication and authorization errors the session's clients
// see.
type authWatch struct {
	mu    sync.Mutex
	count int
	first []string // the first few, for the report
}

func (w *authWatch) note(user, where string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.count++
	if len(w.first) < 10 {
		w.first = append(w.first, fmt.Sprintf("%s %s: %s: %v", time.Now().Format("15:04:05.000"), user, where, err))
	}
}

// check notes err when it is an authentication or authorization error.
func (w *authWatch) check(user, where string, err error) {
	if isAuthError(err) {
		w.note(user, where, err)
	}
}

func (w *authWatch) result() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count, append([]string(nil), w.first...)
}

// authErrors are the Kafka errors that say a broker did not know a credential or an ACL
// that the session set up.
var authErrors = []error{kerr.SaslAuthenticationFailed, kerr.IllegalSaslState, kerr.UnsupportedSaslMechanism,
	kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
	kerr.TransactionalIDAuthorizationFailed, kerr.DelegationTokenAuthorizationFailed}

func isAuthError(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range authErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// watchLogger takes franz-go's error log: a failed SASL exchange ends a connection's set-up
// there, and the request that needed the connection only sees it retried.
type watchLogger struct {
	w    *authWatch
	user string
}

func (l watchLogger) Level() kgo.LogLevel { return kgo.LogLevelError }

func (l watchLogger) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	var err error
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, _ := keyvals[i].(string); k == "err" {
			err, _ = keyvals[i+1].(error)
		}
	}
	switch {
	case isAuthError(err):
		l.w.note(l.user, msg, err)
	case strings.Contains(msg, "sasl") && err != nil && !lostConnection(err):
		// A SASL set-up that failed other than by a connection's loss (franz-go leaves
		// most of those out of this log) is a broker that could not authenticate the user.
		l.w.note(l.user, msg, err)
	}
}

// lostConnection reports whether err is a fault's doing: a connection closed, reset or
// timed out (a killed or paused broker), or the client's own end.
func lostConnection(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed)
}

// watchHook sees every produced record's outcome.
type watchHook struct {
	w    *authWatch
	user string
}

func (h watchHook) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	h.w.check(h.user, "produce", err)
}

// check notes err for user when s is set and err is an authentication or authorization
// error.
func (s *security) check(user, where string, err error) {
	if s != nil {
		s.watch.check(user, where, err)
	}
}

// checkFetches notes the authentication and authorization errors of a poll.
func (s *security) checkFetches(user, where string, fs kgo.Fetches) {
	if s == nil {
		return
	}
	fs.EachError(func(t string, p int32, err error) {
		s.watch.check(user, fmt.Sprintf("%s: fetch %s/%d", where, t, p), err)
	})
}

// tlsDir is where a session keeps its certificates, beside the logs.
func tlsDir(out string) string { return filepath.Join(out, "tls") }
