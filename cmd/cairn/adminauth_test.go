package main

import (
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-io/cairn/internal/tlsconf"
	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
)

// The admin credentials go as basic authentication, from the flags or else the
// environment; a 401 says how to give them.
func TestClusterAdminCredentials(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if pair := u + ":" + p; len(got) == 0 || got[len(got)-1] != pair { // a command may ask twice
			got = append(got, pair)
		}
		if !ok || u != "ops" || p != "s3cret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			w.Write([]byte(`{"message":"authentication failed: unknown user or wrong password","code":401}`))
			return
		}
		w.Write([]byte(healthyBody))
	}))
	defer srv.Close()
	run := func(args ...string) result {
		return runCLI(t, "", append([]string{"cluster", "--admin-url", srv.URL, "health"}, args...)...)
	}

	r := run()
	if r.err == nil || !strings.Contains(r.err.Error(), "authentication failed: unknown user or wrong password (HTTP 401); give a SCRAM user with --admin-user") {
		t.Fatalf("without credentials: %v", r.err)
	}
	if r := run("--admin-user", "ops", "--admin-password", "s3cret"); r.err != nil {
		t.Fatalf("with the flags: %v", r.err)
	}
	t.Setenv(adminUserEnv, "ops")
	t.Setenv(adminPasswordEnv, "s3cret")
	if r := run(); r.err != nil {
		t.Fatalf("from the environment: %v", r.err)
	}
	if r := run("--admin-password", "wrong"); r.err == nil || !strings.Contains(r.err.Error(), "HTTP 401") {
		t.Fatalf("a flag overrides the environment: %v", r.err)
	}
	t.Setenv(adminPasswordEnv, "")
	if r := run(); r.err == nil || !strings.Contains(r.err.Error(), "admin user ops without a password") {
		t.Fatalf("a user without a password: %v", r.err)
	}
	if want := []string{":", "ops:s3cret", "ops:wrong"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("credentials sent %q, want %q", got, want)
	}
}

// --admin-ca verifies an HTTPS admin API, and --admin-cert/--admin-key present a client
// certificate to one that requires it.
func TestClusterAdminTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "admin")
	if err != nil {
		t.Fatal(err)
	}
	srvLeaf, _ := ca.Issue(pkix.Name{CommonName: "localhost"})
	cliLeaf, _ := ca.Issue(pkix.Name{CommonName: "ops"})
	rl, err := tlsconf.New(tlsconf.Files{Cert: srvLeaf.CertFile, Key: srvLeaf.KeyFile, CA: ca.CertFile, ClientAuth: tlsconf.ClientAuthRequired})
	if err != nil {
		t.Fatal(err)
	}
	var cn string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn = r.TLS.PeerCertificates[0].Subject.CommonName
		w.Write([]byte(healthyBody))
	}))
	srv.TLS = rl.ServerConfig()
	srv.StartTLS()
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	run := func(args ...string) result {
		return runCLI(t, "", append([]string{"cluster", "--admin-url", url, "health"}, args...)...)
	}
	if r := run("--admin-ca", ca.CertFile); r.err == nil {
		t.Fatal("a server that requires a client certificate answered without one")
	}
	if r := run("--admin-cert", cliLeaf.CertFile, "--admin-key", cliLeaf.KeyFile); r.err == nil || !strings.Contains(r.err.Error(), "certificate") {
		t.Fatalf("without the CA, the server's certificate must not verify: %v", r.err)
	}
	if r := run("--admin-ca", ca.CertFile, "--admin-cert", cliLeaf.CertFile, "--admin-key", cliLeaf.KeyFile); r.err != nil || cn != "ops" {
		t.Fatalf("with CA and client certificate: %v (client %q)", r.err, cn)
	}
	if r := run("--admin-cert", cliLeaf.CertFile); r.err == nil || !strings.Contains(r.err.Error(), "--admin-cert and --admin-key go together") {
		t.Fatalf("a certificate without its key: %v", r.err)
	}
}
