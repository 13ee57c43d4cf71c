package admin

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/security"
	"github.com/cairn-io/cairn/internal/storage"
	"github.com/cairn-io/cairn/internal/tlsconf"
	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
)

// fakeACLs allows the listed principal/operation pairs and records every question asked.
type fakeACLs struct {
	mu     sync.Mutex
	allow  map[string]bool // "User:x DESCRIBE"
	asked  []string
	hosts  []string
	rtName string
}

func (f *fakeACLs) Authorize(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := string(p) + " " + op.String()
	f.asked, f.hosts, f.rtName = append(f.asked, q), append(f.hosts, host), rt.String()+" "+name
	return f.allow[q]
}

func (f *fakeACLs) questions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// newAuthAdmin is a one-broker cluster on an in-memory disk with an admin server whose
// authentication is o, over the broker's SCRAM users, and whose ACLs are the fake returned.
func newAuthAdmin(t testing.TB, o AuthOptions) (*broker.Broker, *Server, *fakeACLs) {
	t.Helper()
	b, err := broker.New(broker.Config{DataDir: "/d", KafkaAddr: "127.0.0.1:9092", FS: storage.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	acls := &fakeACLs{allow: map[string]bool{}}
	s := NewServer(b, NewMetrics(b))
	o.Credentials, o.Authorizer = b, acls
	s.SetAuth(o)
	s.SetReady(true)
	return b, s, acls
}

func addUser(t *testing.T, b *broker.Broker, mech, user, password string) {
	t.Helper()
	cred, err := security.DeriveScramCredential(mech, user, password, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := b.UpsertScramCredential(user, cred); e != nil {
		t.Fatal(e.Msg)
	}
}

type answer struct {
	code    int
	body    string
	message string
	www     string
}

func request(t *testing.T, url, method, path string, set func(*http.Request)) answer {
	return requestWith(t, http.DefaultClient, url, method, path, set)
}

func requestWith(t *testing.T, hc *http.Client, url, method, path string, set func(*http.Request)) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url+path, nil)
	if set != nil {
		set(req)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var eb struct {
		Message string `json:"message"`
	}
	json.Unmarshal(body, &eb)
	return answer{resp.StatusCode, string(body), eb.Message, resp.Header.Get("WWW-Authenticate")}
}

func basic(user, password string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, password) }
}

func TestAdminBasicAuth(t *testing.T) {
	b, s, acls := newAuthAdmin(t, AuthOptions{RequireAuthentication: true, ProbesOpen: true})
	srv := httptest.NewServer(s)
	defer srv.Close()
	addUser(t, b, security.ScramSHA256, "alice", "right")
	addUser(t, b, security.ScramSHA512, "bob", "bobs")
	acls.allow["User:alice DESCRIBE"] = true
	acls.allow["User:alice ALTER"] = true
	acls.allow["User:bob DESCRIBE"] = true

	// Probes are open: no credentials, no ACL question.
	for _, p := range []string{"/v1/status/ready", "/metrics"} {
		if a := request(t, srv.URL, "GET", p, nil); a.code != 200 {
			t.Fatalf("GET %s without credentials: %d %s", p, a.code, a.body)
		}
	}
	if q := acls.questions(); len(q) != 0 {
		t.Fatalf("probes were authorised: %v", q)
	}

	for _, c := range []struct {
		name   string
		set    func(*http.Request)
		method string
		path   string
		code   int
		msg    string
	}{
		{"no credentials", nil, "GET", "/v1/cluster", 401, "requires credentials"},
		{"wrong password", basic("alice", "wrong"), "GET", "/v1/cluster", 401, "unknown user or wrong password"},
		{"unknown user", basic("mallory", "right"), "GET", "/v1/cluster", 401, "unknown user or wrong password"},
		{"empty user", basic("", "x"), "GET", "/v1/cluster", 401, "empty user name"},
		{"not basic", func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") }, "GET", "/v1/cluster", 401, "malformed Authorization header"},
		{"bad base64", func(r *http.Request) { r.Header.Set("Authorization", "Basic !!!") }, "GET", "/v1/cluster", 401, "malformed Authorization header"},
		{"no colon", func(r *http.Request) { r.Header.Set("Authorization", "Basic YWxpY2U=") }, "GET", "/v1/cluster", 401, "malformed Authorization header"},
		// A path next to a probe's is not a probe.
		{"near a probe", nil, "GET", "/v1/status/ready/", 401, "requires credentials"},
		{"probe by POST", nil, "POST", "/metrics", 401, "requires credentials"},
		{"sha-256 user", basic("alice", "right"), "GET", "/v1/cluster", 200, ""},
		{"sha-512 user", basic("bob", "bobs"), "GET", "/v1/security/users", 200, ""},
		{"alter allowed", basic("alice", "right"), "PUT", "/v1/brokers/99/maintenance", 404, ""},
		{"alter denied", basic("bob", "bobs"), "PUT", "/v1/brokers/1/maintenance", 403, "User:bob may not PUT /v1/brokers/1/maintenance: no ACL allows ALTER on CLUSTER kafka-cluster"},
		{"pprof is guarded too", nil, "GET", "/debug/pprof/", 401, "requires credentials"},
	} {
		a := request(t, srv.URL, c.method, c.path, c.set)
		if a.code != c.code || !strings.Contains(a.message, c.msg) {
			t.Errorf("%s: %s %s: %d %q, want %d with %q", c.name, c.method, c.path, a.code, a.message, c.code, c.msg)
		}
		if c.code == 401 && !strings.HasPrefix(a.www, "Basic realm=") {
			t.Errorf("%s: 401 without a basic challenge: WWW-Authenticate %q", c.name, a.www)
		}
	}
	// bob's PUT was denied before it reached the handler: broker 1 is not in maintenance.
	if a := request(t, srv.URL, "GET", "/v1/brokers/1/maintenance", basic("alice", "right")); !strings.Contains(a.body, `"draining":false`) && !strings.Contains(a.body, "false") {
		t.Errorf("maintenance after a denied PUT: %s", a.body)
	}
	if q := acls.questions(); len(q) == 0 || q[0] != "User:alice DESCRIBE" || acls.rtName != "CLUSTER kafka-cluster" || acls.hosts[0] != "127.0.0.1" {
		t.Errorf("questions %v on %q from %v", q, acls.rtName, acls.hosts)
	}
	// Refusals are counted where the scraper sees them.
	a := request(t, srv.URL, "GET", "/metrics", nil)
	if !strings.Contains(a.body, `cairn_admin_requests_refused_total{reason="unauthenticated"} 10`) ||
		!strings.Contains(a.body, `cairn_admin_requests_refused_total{reason="forbidden"} 1`) {
		t.Errorf("refusal metrics:\n%s", grepLines(a.body, "cairn_admin_requests_refused_total"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// With probes closed, readiness and metrics need credentials like the rest.
func TestAdminProbesClosed(t *testing.T) {
	b, s, acls := newAuthAdmin(t, AuthOptions{RequireAuthentication: true, ProbesOpen: false})
	srv := httptest.NewServer(s)
	defer srv.Close()
	addUser(t, b, security.ScramSHA512, "probe", "pw")
	acls.allow["User:probe DESCRIBE"] = true
	for _, p := range []string{"/v1/status/ready", "/metrics"} {
		if a := request(t, srv.URL, "GET", p, nil); a.code != 401 {
			t.Errorf("GET %s without credentials, probes closed: %d", p, a.code)
		}
		if a := request(t, srv.URL, "GET", p, basic("probe", "pw")); a.code != 200 {
			t.Errorf("GET %s with credentials: %d %s", p, a.code, a.body)
		}
	}
}

// admin.auth=none: requests without credentials are the anonymous principal, and still go
// through the ACLs (which allow everything while authorisation is off).
func TestAdminAuthNoneIsAnonymous(t *testing.T) {
	_, s, acls := newAuthAdmin(t, AuthOptions{ProbesOpen: true})
	srv := httptest.NewServer(s)
	defer srv.Close()
	if a := request(t, srv.URL, "GET", "/v1/cluster", nil); a.code != 403 {
		t.Fatalf("anonymous without an ACL: %d %s", a.code, a.body)
	}
	acls.allow["User:ANONYMOUS DESCRIBE"] = true
	if a := request(t, srv.URL, "GET", "/v1/cluster", nil); a.code != 200 {
		t.Fatalf("anonymous with an ACL: %d %s", a.code, a.body)
	}
	// Credentials given are checked even so: a wrong password is never taken as anonymous.
	if a := request(t, srv.URL, "GET", "/v1/cluster", basic("ghost", "x")); a.code != 401 {
		t.Fatalf("bad credentials under admin.auth=none: %d", a.code)
	}
}

// A verified pair is served from the cache; a new password or a deleted user misses it at
// once rather than after the TTL.
func TestAdminCredentialCache(t *testing.T) {
	b, s, acls := newAuthAdmin(t, AuthOptions{RequireAuthentication: true})
	srv := httptest.NewServer(s)
	defer srv.Close()
	addUser(t, b, security.ScramSHA512, "carol", "one")
	acls.allow["User:carol DESCRIBE"] = true
	for i := 0; i < 3; i++ {
		if a := request(t, srv.URL, "GET", "/v1/cluster", basic("carol", "one")); a.code != 200 {
			t.Fatalf("request %d: %d %s", i, a.code, a.body)
		}
	}
	if h := s.auth.cache.hitCount(); h != 2 {
		t.Fatalf("cache hits after three requests with one pair: %d, want 2", h)
	}
	addUser(t, b, security.ScramSHA512, "carol", "two")
	if a := request(t, srv.URL, "GET", "/v1/cluster", basic("carol", "one")); a.code != 401 {
		t.Fatalf("the old password after a change: %d", a.code)
	}
	if a := request(t, srv.URL, "GET", "/v1/cluster", basic("carol", "two")); a.code != 200 {
		t.Fatalf("the new password: %d", a.code)
	}
	if e := b.DeleteScramCredential("carol", security.ScramSHA512); e != nil {
		t.Fatal(e.Msg)
	}
	if a := request(t, srv.URL, "GET", "/v1/cluster", basic("carol", "two")); a.code != 401 {
		t.Fatalf("a deleted user: %d", a.code)
	}
	if h := s.auth.cache.hitCount(); h != 2 {
		t.Fatalf("cache hits: %d, want still 2", h)
	}
}

// Over HTTPS with client certificates, a verified certificate is the principal User:<CN>;
// one from another CA fails the handshake.
func TestAdminClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "admin")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := tlstest.NewCA(dir, "other")
	srvLeaf, _ := ca.Issue(pkix.Name{CommonName: "localhost"})
	opsLeaf, _ := ca.Issue(pkix.Name{CommonName: "ops"})
	strangerLeaf, _ := other.Issue(pkix.Name{CommonName: "ops"})
	rl, err := tlsconf.New(tlsconf.Files{Cert: srvLeaf.CertFile, Key: srvLeaf.KeyFile, CA: ca.CertFile, ClientAuth: tlsconf.ClientAuthRequested})
	if err != nil {
		t.Fatal(err)
	}
	_, s, acls := newAuthAdmin(t, AuthOptions{RequireAuthentication: true, ProbesOpen: true})
	acls.allow["User:ops DESCRIBE"] = true
	srv := httptest.NewUnstartedServer(s)
	srv.TLS = rl.ServerConfig()
	srv.StartTLS()
	defer srv.Close()

	client := func(leaf *tlstest.Leaf, force bool) *http.Client {
		pem, _ := os.ReadFile(ca.CertFile)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
		if leaf != nil {
			cert, err := tls.LoadX509KeyPair(leaf.CertFile, leaf.KeyFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{cert}
			if force { // sent even though the server names other CAs
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
			}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	if a := requestWith(t, client(&opsLeaf, false), srv.URL, "GET", "/v1/cluster", nil); a.code != 200 {
		t.Fatalf("with the ops certificate: %d %s", a.code, a.body)
	}
	if q := acls.questions(); len(q) != 1 || q[0] != "User:ops DESCRIBE" {
		t.Fatalf("asked %v", q)
	}
	if a := requestWith(t, client(nil, false), srv.URL, "GET", "/v1/cluster", nil); a.code != 401 {
		t.Fatalf("no certificate and no password: %d", a.code)
	}
	if a := requestWith(t, client(nil, false), srv.URL, "GET", "/v1/status/ready", nil); a.code != 200 {
		t.Fatalf("probe over HTTPS without a certificate: %d", a.code)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/cluster", nil)
	if resp, err := client(&strangerLeaf, true).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a certificate of another CA was served: %d", resp.StatusCode)
	}
	if a := requestWith(t, client(&strangerLeaf, false), srv.URL, "GET", "/v1/cluster", nil); a.code != 401 {
		t.Fatalf("a client that withheld its certificate of another CA: %d", a.code)
	}
}
