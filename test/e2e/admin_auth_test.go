package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
	"github.com/cairn-io/cairn/test/harness"
)

// cairnWithEnv runs the cairn binary with extra environment and returns its output.
func cairnWithEnv(t *testing.T, env []string, stdin string, args ...string) cmdResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cairnBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return cmdResult{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// TestAdminBasicAuth: a broker with admin.auth=basic serves its probes to anyone and
// everything else only with a SCRAM user's password. The first user is created over the
// Kafka API (`cairn security user create`), which the admin API's authentication does not
// guard; the CLI then works with the right password, from the environment, and a wrong
// one gets a 401 that says so. The web console asks for the same credentials.
func TestAdminBasicAuth(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{Args: []string{"--admin-auth", "basic"}})
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, p := range []string{"/v1/status/ready", "/metrics"} {
		resp, err := hc.Get("http://" + b.AdminAddr + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s without credentials: HTTP %d, want the probe open", p, resp.StatusCode)
		}
	}
	resp, err := hc.Get("http://" + b.AdminAddr + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("GET /v1/cluster without credentials: HTTP %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	health := func(env ...string) cmdResult {
		return cairnWithEnv(t, env, "", "cluster", "health", "--admin-url", "http://"+b.AdminAddr, "--brokers", b.KafkaAddr)
	}
	if r := health(); r.Err == nil || !strings.Contains(r.Stderr, "this admin API requires credentials") || !strings.Contains(r.Stderr, "--admin-user") {
		t.Fatalf("health without credentials:\n%s", r)
	}

	if r := cairnWithEnv(t, nil, "0ps-pass\n", "security", "user", "create", "ops", "--password-stdin", "--brokers", b.KafkaAddr); r.Err != nil {
		t.Fatalf("creating the first user over the Kafka API:\n%s", r)
	}
	// The credential reaches the admin API once this broker applied it.
	var ok cmdResult
	waitFor(t, 30*time.Second, func() bool {
		ok = health("CAIRN_ADMIN_USER=ops", "CAIRN_ADMIN_PASSWORD=0ps-pass")
		return ok.Err == nil
	})
	if !strings.Contains(ok.Stdout, "healthy") {
		t.Fatalf("health with the password:\n%s", ok)
	}
	r := health("CAIRN_ADMIN_USER=ops", "CAIRN_ADMIN_PASSWORD=wrong")
	if r.Err == nil || !strings.Contains(r.Stderr, "authentication failed: unknown user or wrong password (HTTP 401)") {
		t.Fatalf("health with a wrong password:\n%s", r)
	}
	// Flags work as the environment does, and a change through the admin API itself is
	// authenticated the same way.
	r = cairnWithEnv(t, nil, "", "cluster", "brokers", "--admin-url", "http://"+b.AdminAddr, "--admin-user", "ops", "--admin-password", "0ps-pass")
	if r.Err != nil {
		t.Fatalf("brokers with flags:\n%s", r)
	}
	req, _ := http.NewRequest("POST", "http://"+b.AdminAddr+"/v1/security/users", strings.NewReader(`{"name":"second","password":"pw2"}`))
	req.SetBasicAuth("ops", "0ps-pass")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("creating a user through the admin API with credentials: HTTP %d", resp.StatusCode)
	}
	waitFor(t, 30*time.Second, func() bool {
		return health("CAIRN_ADMIN_USER=second", "CAIRN_ADMIN_PASSWORD=pw2").Err == nil
	})
	// The web console sits behind the same credentials: a browser is asked for them.
	console := func(user, password string) int {
		req, _ := http.NewRequest("GET", "http://"+b.AdminAddr+"/console/", nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := console("", ""); code != 401 {
		t.Fatalf("the console without credentials: HTTP %d, want 401", code)
	}
	if code := console("ops", "wrong"); code != 401 {
		t.Fatalf("the console with a wrong password: HTTP %d, want 401", code)
	}
	if code := console("ops", "0ps-pass"); code != 200 {
		t.Fatalf("the console with credentials: HTTP %d, want 200", code)
	}
	if !b.LogContains("admin API: authentication failed") {
		t.Fatal("the broker's log does not mention the refused requests")
	}
}

// TestAdminHTTPSClientCertificate: with a certificate the admin API serves HTTPS only; a
// client certificate from its CA authenticates as User:<CN> with no password, the probes
// stay open over TLS, and a request with neither certificate nor password is a 401.
func TestAdminHTTPSClientCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "admin")
	if err != nil {
		t.Fatal(err)
	}
	srvLeaf, _ := ca.Issue(pkix.Name{CommonName: "localhost"})
	opsLeaf, _ := ca.Issue(pkix.Name{CommonName: "ops"})
	adminAddr := freeAddr(t)
	cmd := exec.Command(cairnBin, "start", "--node-id", "1", "--data-dir", t.TempDir(),
		"--kafka-addr", freeAddr(t), "--admin-addr", adminAddr, "--rpc-addr", freeAddr(t),
		"--admin-auth", "basic", "--admin-tls-certificate-location", srvLeaf.CertFile, "--admin-tls-key-location", srvLeaf.KeyFile,
		"--admin-tls-client-auth", "requested", "--admin-tls-truststore-location", ca.CertFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	harness.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Errorf("broker exit: %v\n%s", err, tailString(stderr.String(), 20))
		}
	})

	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + strings.Replace(adminAddr, "127.0.0.1", "localhost", 1)
	waitFor(t, 30*time.Second, func() bool {
		resp, err := hc.Get(url + "/v1/status/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	// Plain HTTP is not served on the HTTPS port.
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + adminAddr + "/v1/status/ready"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("the admin API answered plain HTTP with TLS configured")
		}
	}
	health := func(args ...string) cmdResult {
		return cairnWithEnv(t, nil, "", append([]string{"cluster", "health", "--admin-url", url, "--admin-ca", ca.CertFile}, args...)...)
	}
	if r := health(); r.Err == nil || !strings.Contains(r.Stderr, "HTTP 401") {
		t.Fatalf("health over HTTPS without a certificate or password:\n%s", r)
	}
	if r := health("--admin-cert", opsLeaf.CertFile, "--admin-key", opsLeaf.KeyFile); r.Err != nil || !strings.Contains(r.Stdout, "healthy") {
		t.Fatalf("health with the client certificate:\n%s", r)
	}
	if r := cairnWithEnv(t, nil, "", "cluster", "health", "--admin-url", url); r.Err == nil || !strings.Contains(r.Stderr, "certificate") {
		t.Fatalf("health without the CA must not trust the server:\n%s", r)
	}
}

// A switch turned on without the files it needs stops `cairn start` at once, saying which.
func TestSecurityStartRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rpc-tls-enabled", "true"}, "rpc.tls.enabled is true but rpc.tls.certificate.location is not set"},
		{[]string{"--rpc-tls-enabled", "true", "--rpc-tls-certificate-location", "/nonexistent/c.pem",
			"--rpc-tls-key-location", "/nonexistent/k.pem", "--rpc-tls-truststore-location", "/nonexistent/ca.pem"}, "/nonexistent/c.pem"},
		{[]string{"--admin-tls-client-auth", "required"}, "admin.tls.client.auth=required needs HTTPS on the admin API"},
		{[]string{"--admin-auth", "digest"}, "invalid value"},
	} {
		args := append([]string{"start", "--node-id", "1", "--data-dir", t.TempDir(), "--kafka-addr", freeAddr(t),
			"--admin-addr", freeAddr(t), "--rpc-addr", freeAddr(t)}, c.args...)
		r := run(t, 20*time.Second, "", cairnBin, args...)
		if r.Err == nil || strings.Contains(r.Err.Error(), "did not finish") || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("cairn %s: want a prompt refusal mentioning %q:\n%s", strings.Join(c.args, " "), c.want, r)
		}
	}
}
