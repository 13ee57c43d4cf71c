package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// `cairn cluster` runs a cluster's operations: health, brokers, cluster properties,
// partition moves, decommission, maintenance mode and leadership. Most of it talks to a broker's admin
// HTTP API (--admin-url); cluster properties and `leaders balance` go through Kafka
// (kadm, --brokers), as any Kafka tool would. One file per sub-group: cluster_health.go,
// cluster_brokers.go, cluster_config.go, cluster_partitions.go, cluster_maintenance.go,
// cluster_leaders.go, cluster_decommission.go, cluster_recover.go.

const (
	defaultAdminURL = "http://localhost:9644"
	// adminURLEnv overrides the default of --admin-url when the flag is not given.
	adminURLEnv = "CAIRN_ADMIN_URL"
)

// clusterFlags are the persistent flags of `cairn cluster`.
type clusterFlags struct {
	clientFlags
	adminAuthFlags
	adminURL string
	json     bool
	timeout  time.Duration
	// httpClient is nil outside tests (http.DefaultClient's transport, bounded by --timeout).
	httpClient *http.Client
}

func newClusterCmd() *cobra.Command {
	cf := &clusterFlags{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Cluster health, brokers, properties, partition moves, decommission, maintenance and leadership",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cf.register(cmd, true)
	pf := cmd.PersistentFlags()
	pf.StringVar(&cf.adminURL, "admin-url", defaultAdminURL,
		"a broker's admin HTTP API (http://host:port); $"+adminURLEnv+" is used when the flag is not given")
	cf.registerAdminAuth(pf)
	pf.BoolVar(&cf.json, "json", false, "print the admin API's JSON answer unchanged")
	pf.DurationVar(&cf.timeout, "timeout", defaultAdminTimeout, "time limit for each request")
	cmd.AddCommand(
		newClusterHealthCmd(cf),
		newClusterBrokersCmd(cf),
		newClusterConfigCmd(cf),
		newClusterPartitionsCmd(cf),
		newClusterMaintenanceCmd(cf),
		newClusterLeadersCmd(cf),
	)
	cmd.AddCommand(newClusterDecommissionCmds(cf)...)
	return cmd
}

// baseURL is the admin API to talk to: --admin-url if given, else $CAIRN_ADMIN_URL, else
// the default. A bare host:port means http.
func (cf *clusterFlags) baseURL(cmd *cobra.Command) (string, error) {
	raw := cf.adminURL
	if fl := cmd.Flags().Lookup("admin-url"); fl == nil || !fl.Changed {
		if env := strings.TrimSpace(os.Getenv(adminURLEnv)); env != "" {
			raw = env
		}
	}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("no admin API given (use --admin-url or $%s)", adminURLEnv)
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("invalid admin API URL %q: want http://host:port", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// adminError is a failed admin API request: the server's status and its message.
type adminError struct {
	method, path string
	status       int
	message      string
}

func (e *adminError) Error() string {
	return fmt.Sprintf("%s %s: %s (HTTP %d)%s", e.method, e.path, e.message, e.status, adminAuthHint(e.status))
}

// notServed reports whether the broker does not serve the request's path at all (a
// broker from before the endpoint): Go's mux answers 404 or 405 in plain text then.
func (e *adminError) notServed() bool {
	return e.status == http.StatusNotFound && e.message == "404 page not found"
}

// notServed reports whether err is the admin API saying it does not serve the path.
func notServed(err error) bool {
	var ae *adminError
	return errors.As(err, &ae) && ae.notServed()
}

// errorMessage is the reason an admin API error body gives: the contract's "message", the
// older endpoints' "error", else the body's text.
func errorMessage(body []byte) string {
	var eb struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil {
		if eb.Message != "" {
			return eb.Message
		}
		if eb.Error != "" {
			return eb.Error
		}
	}
	if s := strings.TrimSpace(string(body)); s != "" {
		return s
	}
	return "no reason given"
}

// call sends one admin API request (body, when not nil, as JSON) and returns the answer's
// body when its status is 2xx, else an *adminError with the server's message.
func (cf *clusterFlags) call(cmd *cobra.Command, method, path string, body any) ([]byte, error) {
	if cf.timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %v", cf.timeout)
	}
	base, err := cf.baseURL(cmd)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(cmdContext(cmd), cf.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := cf.authorize(cmd, req); err != nil {
		return nil, err
	}
	hc := cf.httpClient
	if hc == nil {
		if hc, err = cf.adminAuthFlags.client(cmd); err != nil {
			return nil, err
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s %s: no answer from the admin API at %s within %v", method, path, base, cf.timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said already
		}
		return nil, fmt.Errorf("%s %s: cannot reach the admin API at %s: %w", method, path, base, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &adminError{method: method, path: path, status: resp.StatusCode, message: errorMessage(out)}
	}
	return out, nil
}

// get fetches path and decodes its JSON into v, returning the raw body too (for --json).
func (cf *clusterFlags) get(cmd *cobra.Command, path string, v any) ([]byte, error) {
	body, err := cf.call(cmd, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("GET %s: the admin API's answer is not what this cairn expects: %w", path, err)
	}
	return body, nil
}

// printRaw writes an admin API body unchanged, ending it with a newline.
func printRaw(w io.Writer, body []byte) error {
	if _, err := w.Write(body); err != nil {
		return err
	}
	if len(body) == 0 || body[len(body)-1] != '\n' {
		_, err := io.WriteString(w, "\n")
		return err
	}
	return nil
}

// kafka runs fn with a Kafka client (and its admin client) and a context bounded by
// --timeout.
func (cf *clusterFlags) kafka(cmd *cobra.Command, fn func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error) error {
	if cf.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", cf.timeout)
	}
	cl, err := cf.newClient(cmd)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(cf.timeout.Milliseconds(), int64(1<<31-1))))
	ctx, cancel := context.WithTimeout(cmdContext(cmd), cf.timeout)
	defer cancel()
	return fn(ctx, cl, adm)
}

// partitionRef is a TOPIC/PARTITION argument.
type partitionRef struct {
	topic     string
	partition int32
}

func (p partitionRef) String() string { return p.topic + "/" + strconv.Itoa(int(p.partition)) }

// path is the admin API path of the partition: /v1/partitions/{topic}/{partition}.
func (p partitionRef) path() string {
	return "/v1/partitions/" + url.PathEscape(p.topic) + "/" + strconv.Itoa(int(p.partition))
}

// parsePartitionRef parses TOPIC/PARTITION. Topic names cannot hold '/', so the last one
// splits.
func parsePartitionRef(s string) (partitionRef, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return partitionRef{}, fmt.Errorf("invalid partition %q: want TOPIC/PARTITION, e.g. orders/0", s)
	}
	topic, num := s[:i], s[i+1:]
	if topic == "" || strings.Contains(topic, "/") {
		return partitionRef{}, fmt.Errorf("invalid partition %q: want TOPIC/PARTITION, e.g. orders/0", s)
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n < 0 {
		return partitionRef{}, fmt.Errorf("invalid partition %q: the partition must be a number from 0, got %q", s, num)
	}
	return partitionRef{topic: topic, partition: int32(n)}, nil
}

// parseBrokerID parses a broker id argument (a positive integer).
func parseBrokerID(s string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid broker id %q: want a positive integer", s)
	}
	return int32(n), nil
}

// parseBrokerList parses a comma-separated list of broker ids, refusing an empty list and
// an id named twice.
func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		id, err := parseBrokerID(f)
		if err != nil {
			return nil, err
		}
		for _, seen := range out {
			if seen == id {
				return nil, fmt.Errorf("broker %d given more than once in %q", id, s)
			}
		}
		out = append(out, id)
	}
	if len(out) == 0 {
		return nil, errors.New("no brokers given: want a comma-separated list of broker ids, e.g. 4,5,6")
	}
	return out, nil
}

// exitError ends the process with code after printing err, if any (main handles it).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return "exit status " + strconv.Itoa(e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }
