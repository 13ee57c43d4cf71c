package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
// one gets a 401 that says so.
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
	if !b.LogContains("admin API: authentication failed") {
		t.Fatal("the broker's log does not mention the refused requests")
	}
}
