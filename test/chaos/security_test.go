package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/chaos/faults"
	"github.com/cairn-io/cairn/test/chaos/history"
)

// TestSecuredClusterWatchesRefusals runs the --security sasl_ssl set-up on a real
// one-broker cluster: the writer produces and the reader reads back with no refusal, also
// after a kill -9 and restart,
// while a reader that produces (no WRITE ACL) and a client with a wrong password are
// refused by the broker, and the watch that fails a session counts both. The admin API
// wants credentials, and takes the admin user's.
func TestSecuredClusterWatchesRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cairn process")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	sec, err := newSecurity(tlsDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	opts := faults.Options{N: 1, LogDir: filepath.Join(dir, "logs")}
	sec.apply(&opts)
	cl, err := faults.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := sec.createUsers(ctx, cl); err != nil {
		t.Fatal(err)
	}
	adm, err := sec.client(cl, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if resp, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("creating the topic: %v %v", err, resp.Err)
	}
	if err := sec.authorize(ctx, cl); err != nil {
		t.Fatal(err)
	}

	produce := func(user string) error {
		c, err := sec.client(cl, user, kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(20*time.Second))
		if err != nil {
			return err
		}
		defer c.Close()
		return c.ProduceSync(ctx, &kgo.Record{Value: []byte(user)}).FirstErr()
	}
	if err := produce(writerUser); err != nil {
		t.Fatalf("the writer's produce: %v", err)
	}
	final, err := finalRead(ctx, cl, sec, 1)
	if err != nil {
		t.Fatalf("the reader's read back: %v", err)
	}
	get := func(hc *http.Client) int {
		resp, err := hc.Get("http://" + cl.Broker(1).AdminAddr + "/v1/brokers")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(sec.adminHTTP(5 * time.Second)); code != http.StatusOK {
		t.Fatalf("the admin user's admin API request: HTTP %d", code)
	}
	if code := get(&http.Client{Timeout: 5 * time.Second}); code != http.StatusUnauthorized {
		t.Fatalf("an anonymous admin API request: HTTP %d, want 401 (admin.auth=basic)", code)
	}
	if n, first := sec.watch.result(); n != 0 || len(final) != 1 {
		t.Fatalf("the allowed users saw %d refusals (%v); read back %v", n, first, final)
	}
	// A restart keeps the listener, its certificate, the users and the ACLs.
	if err := cl.Kill9(1); err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := produce(writerUser); err != nil {
		t.Fatalf("the writer's produce after a restart: %v", err)
	}
	if final, err = finalRead(ctx, cl, sec, 1); err != nil || len(final[history.TP{Topic: topic, Partition: 0}].Records) != 2 {
		t.Fatalf("the reader's read back after a restart: %v, %v", final, err)
	}
	if n, first := sec.watch.result(); n != 0 {
		t.Fatalf("the allowed users saw %d refusals after a restart: %v", n, first)
	}

	// The reader may not write, so its idempotent producer cannot even init (KIP-679).
	if err := produce(readerUser); !isAuthError(err) {
		t.Fatalf("the reader's produce: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	afterProduce, first := sec.watch.result()
	if afterProduce == 0 {
		t.Fatalf("watch counted no refusal after the reader's produce: %v", first)
	}
	sec.passwords["intruder"] = "guess"
	c, err := sec.client(cl, "intruder")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	if err := c.Ping(pctx); err == nil {
		t.Fatal("an unknown user's ping was answered")
	}
	waitFor(t, 10*time.Second, "the failed authentication counted", func() bool {
		n, _ := sec.watch.result()
		return n > afterProduce
	})
	_, first = sec.watch.result()
	t.Logf("refusals seen: %q", first)
}

// TestWatchLoggerTakesOnlyRefusals: franz-go's error log counts when a SASL set-up was
// refused, not when a fault cut the connection under it.
func TestWatchLoggerTakesOnlyRefusals(t *testing.T) {
	var w authWatch
	l := watchLogger{w: &w, user: "u"}
	l.Log(kgo.LogLevelError, "unable to initialize sasl", "broker", "1", "err", &net.OpError{Op: "read", Err: errors.New("use of closed network connection")})
	l.Log(kgo.LogLevelError, "unable to initialize sasl", "broker", "1", "err", io.EOF)
	l.Log(kgo.LogLevelError, "unable to request api versions", "broker", "1", "err", errors.New("something"))
	if n, first := w.result(); n != 0 {
		t.Fatalf("a fault's errors counted: %v", first)
	}
	l.Log(kgo.LogLevelError, "unable to initialize sasl", "broker", "1", "err", fmt.Errorf("invalid username or password: %w", kerr.SaslAuthenticationFailed))
	l.Log(kgo.LogLevelError, "unable to initialize sasl", "broker", "1", "err", errors.New("unexpected server-final message"))
	if n, first := w.result(); n != 2 {
		t.Fatalf("counted %d refused SASL set-ups, want 2: %v", n, first)
	}
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIsAuthError: only the errors that say a broker did not know a credential or an ACL
// count; a fault's ordinary errors (leader moved, timeouts) do not.
func TestIsAuthError(t *testing.T) {
	for _, err := range []error{kerr.SaslAuthenticationFailed, fmt.Errorf("wrapped: %w", kerr.TopicAuthorizationFailed), kerr.ClusterAuthorizationFailed} {
		if !isAuthError(err) {
			t.Errorf("%v is not taken for an authentication or authorization error", err)
		}
	}
	for _, err := range []error{nil, kerr.NotLeaderForPartition, kerr.RequestTimedOut, context.DeadlineExceeded, fmt.Errorf("eof")} {
		if isAuthError(err) {
			t.Errorf("%v is taken for an authentication or authorization error", err)
		}
	}
}
