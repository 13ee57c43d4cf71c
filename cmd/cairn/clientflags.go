package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Shared plumbing of the client subcommands (topic, produce, consume): how they
// find the brokers, build a franz-go client, and parse the small value syntaxes
// that several of them share.

const (
	defaultBrokers = "localhost:9092"
	// brokersEnv overrides the default of --brokers when the flag is not given.
	brokersEnv          = "CAIRN_BROKERS"
	defaultAdminTimeout = 10 * time.Second
)

// clientFlags holds the connection flags every client subcommand takes: the
// brokers, and how to reach a TLS or SASL listener (clientsecurity.go).
type clientFlags struct {
	brokers string
	clientSecurityFlags
}

// register adds --brokers/-b to fs-owning cmd. persistent makes the flag
// available to every subcommand of cmd (used by `cairn topic`).
func (f *clientFlags) register(cmd *cobra.Command, persistent bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	fs.StringVarP(&f.brokers, "brokers", "b", defaultBrokers,
		"comma-separated seed brokers (host:port); $"+brokersEnv+" is used when the flag is not given")
	f.registerSecurity(fs)
}

// seeds returns the seed brokers to dial: the --brokers flag if it was given on
// the command line, else $CAIRN_BROKERS if set and non-empty, else the default.
func (f *clientFlags) seeds(cmd *cobra.Command) ([]string, error) {
	raw := f.brokers
	if fl := cmd.Flags().Lookup("brokers"); fl == nil || !fl.Changed {
		if env := strings.TrimSpace(os.Getenv(brokersEnv)); env != "" {
			raw = env
		}
	}
	return parseBrokers(raw)
}

// parseBrokers splits a comma-separated broker list, trimming blanks and
// dropping empty entries.
func parseBrokers(raw string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(raw, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no brokers given (use --brokers or $%s)", brokersEnv)
	}
	return out, nil
}

// newClient builds a franz-go client for the command's brokers plus opts.
func (f *clientFlags) newClient(cmd *cobra.Command, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := f.seeds(cmd)
	if err != nil {
		return nil, err
	}
	sec, err := f.security(cmd)
	if err != nil {
		return nil, err
	}
	all := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("cairn-cli")}, sec.opts()...)
	all = append(all, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return cl, nil
}

// cmdContext is cmd's context, or the background context when the command was
// not started through Execute.
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// signalContext returns a context that is cancelled by SIGINT/SIGTERM (or when
// parent is). After the first signal the handler is removed, so a second ^C
// kills the process the usual way.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// parseKeyValue parses one "key=value" argument. The value may be empty and may
// itself contain '='; the key must not be empty.
func parseKeyValue(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", fmt.Errorf("invalid config %q: want key=value", s)
	}
	return k, v, nil
}

// parseConfigs parses repeated key=value arguments into a map, rejecting
// malformed entries and keys given twice.
func parseConfigs(kvs []string) (map[string]*string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]*string, len(kvs))
	for _, s := range kvs {
		k, v, err := parseKeyValue(s)
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("config %q given more than once", k)
		}
		out[k] = &v
	}
	return out, nil
}

// brokerError renders an error returned by a broker for one resource, adding the
// broker's free-text message (e.g. why a config is invalid) when it sent one.
func brokerError(err error, msg string) error {
	if err == nil {
		return nil
	}
	msg = strings.TrimSpace(msg)
	if msg == "" || strings.Contains(err.Error(), msg) {
		return err
	}
	return fmt.Errorf("%w (broker says: %s)", err, msg)
}

// requestError wraps a failure to get any answer from the cluster with the
// brokers that were tried, which is what a user needs to fix it.
func requestError(cmd *cobra.Command, f *clientFlags, what string, err error) error {
	seeds, _ := f.seeds(cmd)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer from brokers %s in time: %w", what, strings.Join(seeds, ","), err)
	}
	return fmt.Errorf("%s (brokers %s): %w", what, strings.Join(seeds, ","), err)
}
