package main

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
)

// clearSecurityEnv keeps the caller's environment from answering for a flag.
func clearSecurityEnv(t *testing.T) {
	t.Helper()
	for _, e := range []string{tlsEnv, tlsCAEnv, tlsCertEnv, tlsKeyEnv, saslMechEnv, saslUserEnv, saslPasswordEnv} {
		t.Setenv(e, "")
	}
}

// securityFor parses args into a command carrying client flags and resolves them.
func securityFor(t *testing.T, args ...string) (clientSecurity, error) {
	t.Helper()
	var f clientFlags
	var sec clientSecurity
	var serr error
	cmd := &cobra.Command{
		Use: "x",
		RunE: func(cmd *cobra.Command, _ []string) error {
			sec, serr = f.security(cmd)
			return nil
		},
	}
	f.register(cmd, false)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return sec, serr
}

func TestBenchSecurityBadFlags(t *testing.T) {
	clearSecurityEnv(t)
	// Nothing listens here; every case must fail before dialing.
	const addr = "127.0.0.1:1"
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err := tlstest.NewCA(dir, "bench")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(pkix.Name{CommonName: "client"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "-b", addr, "--sasl-mechanism", "GSSAPI", "--sasl-user", "u", "--sasl-password", "p"}, `invalid --sasl-mechanism "GSSAPI": want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`},
		{[]string{"produce", "-b", addr, "--sasl-mechanism", "SCRAM-SHA-512"}, "--sasl-mechanism SCRAM-SHA-512 needs a user"},
		{[]string{"produce", "-b", addr, "--sasl-mechanism", "PLAIN", "--sasl-user", "alice"}, "SASL user alice without a password"},
		{[]string{"produce", "-b", addr, "--sasl-user", "alice", "--sasl-password", "p"}, "without a mechanism"},
		{[]string{"produce", "-b", addr, "--tls-ca", filepath.Join(dir, "missing.pem")}, "--tls-ca: open"},
		{[]string{"produce", "-b", addr, "--tls-ca", notPEM}, "holds no PEM certificate"},
		{[]string{"produce", "-b", addr, "--tls-cert", leaf.CertFile}, "--tls-cert and --tls-key go together"},
		{[]string{"produce", "-b", addr, "--tls-key", leaf.KeyFile}, "--tls-cert and --tls-key go together"},
		{[]string{"produce", "-b", addr, "--tls-cert", leaf.CertFile, "--tls-key", notPEM}, "--tls-cert/--tls-key"},
		{[]string{"consume", "-b", addr, "--tls-ca", notPEM}, "holds no PEM certificate"},
		{[]string{"consume", "-b", addr, "--raw", "--tls-ca", ca.CertFile}, "drop --raw to consume over TLS or SASL"},
		{[]string{"consume", "-b", addr, "--raw", "--sasl-mechanism", "PLAIN", "--sasl-user", "u", "--sasl-password", "p"}, "drop --raw"},
		{[]string{"e2e", "-b", addr, "--sasl-mechanism", "scram"}, "needs a user"},
	} {
		r := runBench(t, tc.args...)
		if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("bench %s: got error %v, want one containing %q", strings.Join(tc.args, " "), r.err, tc.want)
		}
	}

	// The environment answers for a flag that is not given, and a bad value there is
	// named too.
	t.Setenv(saslMechEnv, "SCRAM-SHA-1")
	t.Setenv(saslUserEnv, "alice")
	t.Setenv(saslPasswordEnv, "secret")
	if r := runBench(t, "produce", "-b", addr); r.err == nil || !strings.Contains(r.err.Error(), `invalid --sasl-mechanism "SCRAM-SHA-1"`) {
		t.Errorf("mechanism from $%s: got %v", saslMechEnv, r.err)
	}
	// A password in the environment alone is left for the commands that use SASL.
	t.Setenv(saslMechEnv, "")
	if sec, err := securityFor(t); err != nil || sec.enabled() {
		t.Errorf("$%s and $%s alone: got %+v, %v; want plaintext without SASL", saslUserEnv, saslPasswordEnv, sec, err)
	}
	t.Setenv(saslMechEnv, "scram-sha-512")
	if sec, err := securityFor(t); err != nil || sec.sasl == nil || sec.sasl.Name() != "SCRAM-SHA-512" || sec.tls != nil {
		t.Errorf("SASL from the environment: got %+v, %v; want SCRAM-SHA-512 without TLS", sec, err)
	}
	if sec, err := securityFor(t, "--tls"); err != nil || sec.tls == nil || sec.tls.MinVersion != tls.VersionTLS12 {
		t.Errorf("--tls: got %+v, %v; want TLS 1.2 or later", sec, err)
	}
	clearSecurityEnv(t)
	t.Setenv(tlsEnv, "maybe")
	if r := runBench(t, "produce", "-b", addr); r.err == nil || !strings.Contains(r.err.Error(), `invalid $CAIRN_TLS "maybe"`) {
		t.Errorf("$%s=maybe: got %v", tlsEnv, r.err)
	}
}

// secureFakeCluster starts a fake cluster that serves only TLS with SASL, where alice
// is a SCRAM-SHA-512 superuser, and returns its address and the CA to verify it by.
func secureFakeCluster(t *testing.T) (addr, caFile string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "bench")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(pkix.Name{CommonName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(server.CertFile, server.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(2),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "alice", "alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ","), ca.CertFile
}

// TestBenchOverTLSAndSASL produces and consumes through a cluster that serves only TLS
// with SCRAM-SHA-512, and sees a wrong password refused.
func TestBenchOverTLSAndSASL(t *testing.T) {
	clearSecurityEnv(t)
	addr, caFile := secureFakeCluster(t)
	secure := []string{"-b", addr, "--tls-ca", caFile, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "alice"}
	t.Setenv(saslPasswordEnv, "alice-secret")
	prod := benchJSON(t, append([]string{"produce", "--topic", "s", "--producers", "2", "--record-size", "100",
		"--rate", "2000", "--duration", "3s", "--warmup", "500ms"}, secure...)...)
	if prod["errors"] != 0.0 || prod["records"].(float64) <= 0 {
		t.Errorf("produce over SASL_SSL: %v", prod)
	}
	cons := benchJSON(t, append([]string{"consume", "--topic", "s", "--duration", "30s"}, secure...)...)
	if cons["records"].(float64) < prod["records"].(float64) {
		t.Errorf("consumed %v records over SASL_SSL, produced %v", cons["records"], prod["records"])
	}

	t.Setenv(saslPasswordEnv, "wrong")
	if r := runBench(t, append([]string{"produce", "--topic", "s", "--duration", "1s"}, secure...)...); r.err == nil {
		t.Errorf("produce with a wrong password succeeded:\n%s", r.out)
	}
}

// TestClientCommandsOverTLSAndSASL: the flags are the same on the other client commands,
// given to a parent command (topic) or to the command itself (produce, consume).
func TestClientCommandsOverTLSAndSASL(t *testing.T) {
	clearSecurityEnv(t)
	addr, caFile := secureFakeCluster(t)
	t.Setenv(saslPasswordEnv, "alice-secret")
	secure := []string{"-b", addr, "--tls-ca", caFile, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "alice"}
	mustRun(t, "", append([]string{"topic", "create", "greetings", "-p", "1"}, secure...)...)
	mustRun(t, "hello\nworld\n", append([]string{"produce", "greetings"}, secure...)...)
	if out := mustRun(t, "", append([]string{"consume", "greetings", "-n", "2"}, secure...)...); out != "hello\nworld\n" {
		t.Errorf("consumed %q over SASL_SSL, want hello and world", out)
	}
	if r := runCLI(t, "", "topic", "list", "-b", addr, "--sasl-mechanism", "SCRAM-SHA-384", "--sasl-user", "alice"); r.err == nil ||
		!strings.Contains(r.err.Error(), `invalid --sasl-mechanism "SCRAM-SHA-384"`) {
		t.Errorf("topic list with an unknown mechanism: %v", r.err)
	}
}
