package admin

// Authentication and authorisation of the admin API (issue 15). Every request but the open
// probes gets a principal, from the first of:
//
//   - a client certificate the HTTPS listener verified: User:<its common name>;
//   - HTTP basic credentials, checked against the SCRAM users in the controller;
//   - nothing: User:ANONYMOUS while admin.auth is none, else 401.
//
// and is then authorised by the broker's ACLs as an operation on the cluster: DESCRIBE for
// GET and HEAD, ALTER for anything else. With authorisation off (the default) every
// principal is allowed, so admin.auth=none behaves exactly as the admin API always did.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// Authorizer decides what a principal may do; the broker implements it with its ACLs.
type Authorizer interface {
	Authorize(principal security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
}

// clusterResource is the one CLUSTER resource of Kafka's ACLs, which the admin API's
// operations act on.
const clusterResource = "kafka-cluster"

// DefaultCredentialCacheTTL is how long a verified user and password are trusted before
// PBKDF2 runs again. Short, since a stolen password should stop working soon after it is
// changed; a change of the stored credential ends it at once anyway.
const DefaultCredentialCacheTTL = 30 * time.Second

// maxCachedCredentials bounds the cache; only successful verifications enter it.
const maxCachedCredentials = 4096

// AuthOptions configures SetAuth.
type AuthOptions struct {
	// RequireAuthentication answers 401 to a request with neither basic credentials nor a
	// verified client certificate (admin.auth=basic).
	RequireAuthentication bool
	// ProbesOpen serves GET /v1/status/ready and GET /metrics to anyone, unauthorised.
	ProbesOpen  bool
	Credentials security.CredentialStore
	Authorizer  Authorizer
	// CacheTTL is DefaultCredentialCacheTTL when zero.
	CacheTTL time.Duration
	Logger   *slog.Logger
}

type authenticator struct {
	opts    AuthOptions
	cache   credentialCache
	refused *prometheus.CounterVec
	logMu   sync.Mutex
	logNext time.Time
	quiet   int // failures not logged since the last line
}

// SetAuth turns on authentication and authorisation. Call it before serving.
func (s *Server) SetAuth(o AuthOptions) {
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCredentialCacheTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	a := &authenticator{opts: o, cache: credentialCache{ttl: o.CacheTTL, entries: map[[32]byte]cachedCredential{}},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_admin_requests_refused_total",
			Help: "Admin API requests refused: unauthenticated (401: no or bad credentials) or forbidden (403: no ACL allows it).",
		}, []string{"reason"})}
	s.m.reg.MustRegister(a.refused)
	s.auth = a
}

// isProbe reports whether r is one of the requests admin.auth.probes.open leaves open. The
// paths are matched exactly: anything else, however close, is authenticated.
func isProbe(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/v1/status/ready" || r.URL.Path == "/metrics")
}

// admit authenticates and authorises r, answering 401 or 403 itself when it refuses.
func (a *authenticator) admit(w http.ResponseWriter, r *http.Request) bool {
	if a.opts.ProbesOpen && isProbe(r) {
		return true
	}
	p, why := a.authenticate(r)
	if p == "" {
		a.refused.WithLabelValues("unauthenticated").Inc()
		a.logRefusal("admin API: authentication failed", r, "reason", why)
		w.Header().Set("WWW-Authenticate", `Basic realm="cairn admin API", charset="UTF-8"`)
		writeError(w, http.StatusUnauthorized, "authentication failed: %s", why)
		return false
	}
	op := kmsg.ACLOperationAlter
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		op = kmsg.ACLOperationDescribe
	}
	if !a.opts.Authorizer.Authorize(p, remoteHost(r), op, kmsg.ACLResourceTypeCluster, clusterResource) {
		a.refused.WithLabelValues("forbidden").Inc()
		a.logRefusal("admin API: request denied by ACLs", r, "principal", string(p), "operation", op.String())
		writeError(w, http.StatusForbidden, "%s may not %s %s: no ACL allows %s on CLUSTER %s for this principal and host",
			p, r.Method, r.URL.Path, op, clusterResource)
		return false
	}
	return true
}

// authenticate returns r's principal, or "" and why there is none.
func (a *authenticator) authenticate(r *http.Request) (security.Principal, string) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		cn := r.TLS.PeerCertificates[0].Subject.CommonName
		if cn == "" {
			return "", "the client certificate has no common name to map to a principal"
		}
		return security.UserPrincipal(cn), ""
	}
	user, password, ok := r.BasicAuth()
	switch {
	case ok && user == "":
		return "", "empty user name in the basic credentials"
	case ok:
		if !a.verify(user, password) {
			return "", "unknown user or wrong password"
		}
		return security.UserPrincipal(user), ""
	case r.Header.Get("Authorization") != "":
		return "", `malformed Authorization header: want "Basic " and base64 of user:password`
	case a.opts.RequireAuthentication:
		return "", "this admin API requires credentials: HTTP basic authentication with a SCRAM user, or a client certificate"
	}
	return security.Anonymous, ""
}

// verify checks user's password against either stored SCRAM credential, from the cache when
// the same pair was verified against the same stored key within the TTL.
func (a *authenticator) verify(user, password string) bool {
	var cred security.ScramCredential
	found := false
	if a.opts.Credentials != nil {
		for _, m := range []string{security.ScramSHA512, security.ScramSHA256} {
			if cred, found = a.opts.Credentials.ScramCredential(user, m); found {
				break
			}
		}
	}
	if !found {
		// As long as a wrong password takes, so the answer's time does not say who exists.
		security.VerifyPassword(decoy, password)
		return false
	}
	key := cacheKey(user, password)
	if a.cache.hit(key, cred.StoredKey) {
		return true
	}
	if !security.VerifyPassword(cred, password) {
		return false
	}
	a.cache.put(key, cred.StoredKey)
	return true
}

// logRefusal logs at most one refusal per five seconds, with the count of those skipped: a
// script retrying with a wrong password must not flood the log. The metric counts them all.
func (a *authenticator) logRefusal(msg string, r *http.Request, args ...any) {
	a.logMu.Lock()
	now := time.Now()
	if now.Before(a.logNext) {
		a.quiet++
		a.logMu.Unlock()
		return
	}
	a.logNext, args = now.Add(5*time.Second), append(args, "suppressed_since_last", a.quiet)
	a.quiet = 0
	a.logMu.Unlock()
	a.opts.Logger.Warn(msg, append(args, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)...)
}

func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// decoy is a credential no password matches, verified for unknown users.
var decoy = func() security.ScramCredential {
	pw := make([]byte, 24)
	rand.Read(pw)
	c, err := security.DeriveScramCredential(security.ScramSHA512, "decoy", hex.EncodeToString(pw), security.DefaultScramIterations, nil)
	if err != nil {
		panic("admin: deriving the decoy credential: " + err.Error())
	}
	return c
}()

// cacheSecret keys the cache's hashes, so that the cache holds nothing a fast offline guess
// could test a password against.
var cacheSecret = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("admin: no randomness for the credential cache: " + err.Error())
	}
	return b
}()

func cacheKey(user, password string) [32]byte {
	m := hmac.New(sha256.New, cacheSecret)
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(password))
	var k [32]byte
	copy(k[:], m.Sum(nil))
	return k
}

type cachedCredential struct {
	storedKey []byte // the credential verified against: a new password or a deletion misses
	until     time.Time
}

type credentialCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[[32]byte]cachedCredential
	hits    int
}

func (c *credentialCache) hit(key [32]byte, storedKey []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || time.Now().After(e.until) || !bytes.Equal(e.storedKey, storedKey) {
		return false
	}
	c.hits++
	return true
}

func (c *credentialCache) put(key [32]byte, storedKey []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedCredentials {
		now := time.Now()
		for k, e := range c.entries {
			if now.After(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCachedCredentials {
			clear(c.entries)
		}
	}
	c.entries[key] = cachedCredential{storedKey: bytes.Clone(storedKey), until: time.Now().Add(c.ttl)}
}

// hitCount is how many verifications the cache saved, for tests.
func (c *credentialCache) hitCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}
