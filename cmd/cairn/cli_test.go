package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Helpers shared by the client-command tests: an in-process fake Kafka
// cluster and a way to run the CLI against it with captured stdio.

// newFakeCluster starts a one-broker in-process cluster with the given topics
// (each of `partitions` partitions) and returns its address.
func newFakeCluster(t *testing.T, partitions int32, topics ...string) string {
	t.Helper()
	_, addr := startFakeCluster(t, partitions, topics...)
	return addr
}

// startFakeCluster is newFakeCluster that also returns the cluster, for tests
// that steer its answers.
func startFakeCluster(t *testing.T, partitions int32, topics ...string) (*kfake.Cluster, string) {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DefaultNumPartitions(3)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("starting fake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c, strings.Join(c.ListenAddrs(), ",")
}

// newTestRoot builds a root command like main's, wiring the client commands.
func newTestRoot() *cobra.Command {
	root := &cobra.Command{Use: "cairn", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newTopicCmd(), newProduceCmd(), newConsumeCmd(), newClusterCmd(), newSecurityCmd())
	return root
}

type result struct {
	out, errOut string
	err         error
}

// runCLIContext runs `cairn args...` with stdin and ctx and captures its output.
func runCLIContext(ctx context.Context, t *testing.T, stdin string, args ...string) result {
	t.Helper()
	root := newTestRoot()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

// runCLI runs `cairn args...` with a generous overall deadline so a hung
// command fails the test instead of the whole run.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return runCLIContext(ctx, t, stdin, args...)
}

// mustRun is runCLI that fails the test on a command error.
func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := runCLI(t, stdin, args...)
	if r.err != nil {
		t.Fatalf("cairn %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.out, r.errOut)
	}
	return r.out
}

// wantErr runs the command and fails the test unless it errors with a message
// containing every one of subs.
func wantErr(t *testing.T, stdin string, args []string, subs ...string) result {
	t.Helper()
	r := runCLI(t, stdin, args...)
	if r.err == nil {
		t.Fatalf("cairn %s: want an error, got none\nstdout:\n%s", strings.Join(args, " "), r.out)
	}
	for _, s := range subs {
		if !strings.Contains(r.err.Error(), s) {
			t.Fatalf("cairn %s: error %q does not contain %q", strings.Join(args, " "), r.err, s)
		}
	}
	return r
}
