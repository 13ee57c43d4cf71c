// Package lab is `cairn lab`, the durability lab: on one machine it starts a three-broker
// cluster of its own (real cairn processes of this binary, under --simulate-power-loss, in
// a scratch folder), stops one write at each boundary in turn with real faults (SIGSTOP of
// followers, the fsync hold of a simulated-power-loss broker, kill -9 as the power cut), and
// shows what survived next to what the topic's contract (internal/contract) promised. Every
// outcome it prints is observed by reading the cluster back, never assumed. It owns the
// lab's cluster and its steps; it must not be used against a cluster it did not start.
package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/internal/contract"
	"github.com/cairn-io/cairn/test/harness"
)

// cluster is the lab's three brokers, one per rack.
type cluster struct {
	bs     []*harness.Broker
	out    io.Writer
	http   *http.Client
	paused map[int]bool // by index into bs
}

func (c *cluster) pause(i int) error {
	if err := c.bs[i].Pause(); err != nil {
		return err
	}
	c.paused[i] = true
	return nil
}

var labRacks = []string{"rack-a", "rack-b", "rack-c"}

// startCluster launches the brokers of binary in dir and waits until each lists all three.
func startCluster(ctx context.Context, binary, dir string, out io.Writer) (*cluster, error) {
	c := &cluster{out: out, http: &http.Client{Timeout: 5 * time.Second}, paused: map[int]bool{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, seeds, err := harness.ClusterAddrs(len(labRacks))
	if err != nil {
		return nil, err
	}
	for i, rack := range labRacks {
		b := harness.New(harness.Options{ID: i + 1, Binary: binary,
			DataDir: filepath.Join(dir, fmt.Sprintf("broker-%d", i+1)), LogPath: filepath.Join(dir, fmt.Sprintf("broker-%d.log", i+1)),
			// A killed follower leaves the ISR within 2 s rather than 30, so that a step need
			// not wait out the production default.
			Args: []string{"--seeds", strings.Join(seeds, ","), "--rack", rack, "--simulate-power-loss", "--replica-lag-time-max-ms", "2000"}})
		b.KafkaAddr, b.AdminAddr, b.RPCAddr = addrs[i][0], addrs[i][1], addrs[i][2]
		c.bs = append(c.bs, b)
	}
	for i, err := range harness.LaunchAll(ctx, c.bs...) {
		if err != nil {
			c.close()
			return nil, fmt.Errorf("starting broker %d: %w (log: %s)", i+1, err, c.bs[i].LogPath)
		}
	}
	if err := c.waitListed(ctx); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *cluster) waitListed(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, b := range c.bs {
		if !b.Running() {
			continue
		}
		if err := harness.WaitListed(wctx, len(c.bs), b); err != nil {
			return err
		}
	}
	return nil
}

// close kills what still runs: the lab's data is scratch.
func (c *cluster) close() {
	for _, b := range c.bs {
		if b.Running() {
			_ = b.Resume()
			_ = b.Kill()
		}
	}
}

// client is a franz-go client of the cluster with opts, seeded with the brokers that are
// not paused: a paused seed would hold the client's first metadata request until it times
// out.
func (c *cluster) client(opts ...kgo.Opt) (*kgo.Client, error) {
	var seeds []string
	for i, b := range c.bs {
		if !c.paused[i] {
			seeds = append(seeds, b.KafkaAddr)
		}
	}
	base := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(100 * time.Millisecond), kgo.ClientID("cairn-lab")}
	return kgo.NewClient(append(base, opts...)...)
}

// createTopic creates a one-partition RF=3 topic with configs and waits until all three
// replicas are in sync.
func (c *cluster) createTopic(ctx context.Context, name string, configs map[string]*string) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", name, err)
	}
	return c.waitUntil(ctx, "all three replicas of "+name+" in sync", func() bool {
		st, ok := c.leaderStatus(name)
		return ok && len(st.ISR) == 3
	})
}

func (c *cluster) waitUntil(ctx context.Context, what string, cond func() bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// status is a broker's view of partition 0 of topic; ok is false for a broker that is
// down, paused or without the replica.
func (c *cluster) status(b *harness.Broker, topic string) (harness.PartitionStatus, bool) {
	if !b.Running() {
		return harness.PartitionStatus{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := b.PartitionStatusWith(ctx, c.http, topic, 0)
	return st, err == nil
}

// leaderStatus is the status from the broker that leads partition 0 of topic.
func (c *cluster) leaderStatus(topic string) (harness.PartitionStatus, bool) {
	for _, b := range c.bs {
		if st, ok := c.status(b, topic); ok && st.IsLeader {
			return st, true
		}
	}
	return harness.PartitionStatus{}, false
}

// converged reports whether all three replicas of topic are in sync and hold the same log
// end as the leader.
func (c *cluster) converged(topic string) bool {
	l, ok := c.leaderStatus(topic)
	if !ok || len(l.ISR) != len(c.bs) {
		return false
	}
	for _, b := range c.bs {
		if st, ok := c.status(b, topic); !ok || st.LogEnd != l.LogEnd {
			return false
		}
	}
	return true
}

// leader is the index of the broker leading partition 0 of topic, -1 if none answers so.
func (c *cluster) leader(topic string) int {
	for i, b := range c.bs {
		if st, ok := c.status(b, topic); ok && st.IsLeader {
			return i
		}
	}
	return -1
}

// boundaries prints the five boundaries of each replica of partition 0 of topic.
func (c *cluster) boundaries(topic string) {
	tw := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  broker\track\trole\tlog end\tflushed\tmajority repl.\tcommitted\tvisible")
	for i, b := range c.bs {
		st, ok := c.status(b, topic)
		switch {
		case c.paused[i]:
			fmt.Fprintf(tw, "  %d\t%s\tpaused (SIGSTOP)\t\t\t\t\t\n", i+1, labRacks[i])
		case !ok:
			fmt.Fprintf(tw, "  %d\t%s\tdown\t\t\t\t\t\n", i+1, labRacks[i])
		default:
			role, majority := "follower", "-"
			if st.IsLeader {
				role, majority = "leader", strconv.FormatInt(st.MajorityReplicated, 10)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%d\t%s\t%d\t%d\n", i+1, labRacks[i], role, st.LogEnd, st.Flushed, majority, st.Committed, st.LastVisible)
		}
	}
	tw.Flush()
}

// holdAllFsyncs holds every fsync of every broker (the admin gate of a
// --simulate-power-loss broker) until the power cut that ends the step.
func (c *cluster) holdAllFsyncs() error {
	for i, b := range c.bs {
		req, err := http.NewRequest(http.MethodPut, "http://"+b.AdminAddr+"/v1/lab/fsync_hold", nil)
		if err != nil {
			return err
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return fmt.Errorf("broker %d fsync hold: %w", i+1, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("broker %d fsync hold: HTTP %d", i+1, resp.StatusCode)
		}
	}
	return nil
}

// contractOf is the topic's contract as the first running broker's admin API explains it now.
func (c *cluster) contractOf(topic string) (contract.Contract, error) {
	var out contract.Contract
	for _, b := range c.bs {
		if !b.Running() {
			continue
		}
		resp, err := c.http.Get("http://" + b.AdminAddr + "/v1/topics/" + topic + "/contract")
		if err != nil {
			continue
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			return out, nil
		}
	}
	return out, fmt.Errorf("no broker explained the contract of %s", topic)
}

// powerCut kills every broker at once (SIGKILL under --simulate-power-loss: what was not
// fsynced is gone) and starts them again.
func (c *cluster) powerCut(ctx context.Context) error {
	for i, b := range c.bs {
		_ = b.Resume() // a paused broker loses power too
		delete(c.paused, i)
	}
	if err := harness.Kill(c.bs...); err != nil {
		return err
	}
	return c.restart(ctx, c.bs...)
}

// restart starts bs again on their addresses, together: brokers of a cluster that was
// wholly down are ready only once a majority of them answers.
func (c *cluster) restart(ctx context.Context, bs ...*harness.Broker) error {
	for i, err := range harness.Together(bs, func(b *harness.Broker) error { return b.LaunchOnFixedPorts(ctx) }) {
		if err != nil {
			return fmt.Errorf("restarting broker %d: %w (log: %s)", bs[i].ID, err, bs[i].LogPath)
		}
	}
	return c.waitListed(ctx)
}
