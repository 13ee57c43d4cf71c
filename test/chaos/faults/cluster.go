// Package faults runs a cluster of real `cairn` processes on loopback and injects faults
// into it: kill -9, SIGSTOP/SIGCONT, graceful restarts, power loss (kill -9 under
// --simulate-power-loss) and network partitions between any two brokers, one direction at
// a time. It is the fault-injection layer of issue 5; a workload and a checker sit on top.
// The brokers' process lifecycle (launch, readiness, signals, logs) is test/harness's; this
// package adds what only chaos needs: the link proxies, the power-loss flag, the event log
// and the numbering of brokers by node id. It must not schedule faults or check data:
// test/chaos and test/chaos/history do.
//
// Brokers are numbered 1..N (their node ids). Each runs with its own data folder, its rack
// (Options.Racks; by default a rack of its own, rack-i) and, in front of its rpc listener, a proxy the harness controls: the broker
// advertises the proxy's address (--advertised-rpc-addr) and every broker's seeds are the
// proxy addresses, so all inter-broker traffic runs through the proxies. Inter-broker
// connections carry traffic one way (the dialler's hello names the sending node), so the
// proxy of broker `to` cutting node `from` cuts exactly the from → to direction, and its
// delay for node `from` (Options.LinkDelay, SetLinkDelay) delays exactly that direction.
// Kafka and admin traffic is not proxied.
//
// Options.Listeners gives every broker further Kafka listeners (SASL_SSL, say) beside the
// PLAINTEXT one the harness's readiness checks use, and Options.RPCTLS puts the
// inter-broker transport under mutual TLS: each broker presents a certificate of that CA,
// and each proxy ends the dialler's TLS (it must read the hello, which TLS hides) and dials
// its broker under TLS again, with a certificate of the same CA. Restarts keep all of it.
//
// Every wait is bounded; Close stops every process, and on Linux the kernel kills the
// brokers if the harness process dies first (Pdeathsig).
package faults

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
	"github.com/cairn-io/cairn/test/harness"
)

// Options configures Start. Zero values take the defaults noted.
type Options struct {
	N int // number of brokers (node ids 1..N); required
	// Binary is the cairn binary to run; "" builds github.com/cairn-io/cairn/cmd/cairn
	// (the working directory must be inside the module) into a folder Close removes.
	Binary string
	// LogDir receives one log per broker (broker-<id>.log, every start appended) and the
	// harness's own event log (harness.log). The harness never removes it; "" makes a new
	// folder under the system's temporary folder (see Cluster.LogDir).
	LogDir string
	// DataDir holds the brokers' data folders (node-<id>); "" makes a temporary folder that
	// Close removes.
	DataDir string
	// SimulatePowerLoss starts every broker with --simulate-power-loss; PowerLoss needs it.
	SimulatePowerLoss bool
	LogLevel          string   // broker --log-level (default "info")
	Args              []string // extra `cairn start` flags for every broker
	// ReadyTimeout bounds each wait for a broker's readiness (default 30 s); StopTimeout
	// bounds each wait for an exit after SIGTERM (default 30 s), after which the broker is
	// killed and the stop reported as failed.
	ReadyTimeout, StopTimeout time.Duration
	// Logf, when set, also receives every harness event (faults, starts, stops).
	Logf func(format string, args ...any)
	// Racks is each broker's --rack, broker id i at index i-1; nil gives each broker a rack
	// of its own (rack-i). Otherwise it must name a rack for every broker.
	Racks []string
	// LinkDelay, when set, gives the delay of the inter-broker direction from → to (see
	// RackDelays); it applies from the start and SetLinkDelay changes it later.
	LinkDelay func(from, to int) time.Duration
	// Listeners are further Kafka listeners of every broker, beside the PLAINTEXT one on
	// KafkaAddr (see harness.Options.Listeners); TLS is their PEM material.
	Listeners []harness.Listener
	TLS       harness.TLSFiles
	// RPCTLS, when set, is the CA of the inter-broker mutual TLS (rpc.tls.*): Start issues
	// each broker, and the proxies, a certificate of it.
	RPCTLS *tlstest.CA
	// AdminHTTP, when set, is the client of PartitionStatus, for an admin API that wants
	// credentials; the default is http.DefaultClient.
	AdminHTTP *http.Client
}

// DefaultRacks are the racks of n brokers when Options.Racks is nil: a rack of its own
// each, rack-1 … rack-n.
func DefaultRacks(n int) []string {
	racks := make([]string, n)
	for i := range racks {
		racks[i] = fmt.Sprintf("rack-%d", i+1)
	}
	return racks
}

// RackDelays returns a LinkDelay that delays a link by inRack between two brokers of the
// same rack and by crossRack between brokers of different racks (racks as in
// Options.Racks, broker id i at index i-1).
func RackDelays(racks []string, inRack, crossRack time.Duration) func(from, to int) time.Duration {
	racks = slices.Clone(racks)
	return func(from, to int) time.Duration {
		if from >= 1 && to >= 1 && from <= len(racks) && to <= len(racks) && racks[from-1] == racks[to-1] {
			return inRack
		}
		return crossRack
	}
}

// Broker is one broker of the cluster: the common harness's broker and the address of the
// proxy in front of its rpc listener.
type Broker struct {
	*harness.Broker
	AdvertisedRPCAddr string // its proxy: what the other brokers dial
}

// Cluster is a running set of brokers and their proxies.
type Cluster struct {
	opts    Options
	brokers []*Broker
	proxies []*proxy
	seeds   string
	cleanup []string // folders Close removes

	evMu   sync.Mutex
	events *os.File

	closeOnce sync.Once
	closeErr  error
}

// Start builds the binary if needed, starts opts.N brokers together (founders wait for
// every seed) and returns once every broker is ready and lists every broker in its
// metadata, or ctx ends. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.N < 1 {
		return nil, errors.New("faults: Options.N must be at least 1")
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = harness.DefaultReadyTimeout
	}
	if opts.Racks == nil {
		opts.Racks = DefaultRacks(opts.N)
	}
	if len(opts.Racks) != opts.N {
		return nil, fmt.Errorf("faults: Options.Racks names %d racks for %d brokers", len(opts.Racks), opts.N)
	}
	for i, r := range opts.Racks {
		if r == "" {
			return nil, fmt.Errorf("faults: Options.Racks gives broker %d no rack", i+1)
		}
	}
	opts.Racks = slices.Clone(opts.Racks)
	c := &Cluster{opts: opts}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.opts.LogDir == "" {
		if c.opts.LogDir, err = os.MkdirTemp("", "cairn-chaos-logs-"); err != nil {
			return nil, err
		}
	} else if err = os.MkdirAll(c.opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	if c.events, err = os.OpenFile(filepath.Join(c.opts.LogDir, "harness.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	if c.opts.DataDir == "" {
		if c.opts.DataDir, err = os.MkdirTemp("", "cairn-chaos-data-"); err != nil {
			return nil, err
		}
		c.cleanup = append(c.cleanup, c.opts.DataDir)
	}
	bin := opts.Binary
	if bin == "" {
		dir, err := os.MkdirTemp("", "cairn-chaos-bin-")
		if err != nil {
			return nil, err
		}
		c.cleanup = append(c.cleanup, dir)
		if bin, err = harness.Build(ctx, dir); err != nil {
			return nil, err
		}
	}

	var ptls *proxyTLS
	if opts.RPCTLS != nil {
		if ptls, err = newProxyTLS(opts.RPCTLS); err != nil {
			return nil, err
		}
	}
	var seeds []string
	for id := 1; id <= opts.N; id++ {
		p, err := newProxy(int32(id), c.logf, ptls)
		if err != nil {
			return nil, err
		}
		c.proxies = append(c.proxies, p)
		seeds = append(seeds, p.addr())
	}
	if opts.LinkDelay != nil {
		for from := 1; from <= opts.N; from++ {
			for to := 1; to <= opts.N; to++ {
				if from != to {
					c.proxies[to-1].setDelay(int32(from), opts.LinkDelay(from, to))
				}
			}
		}
	}
	c.seeds = strings.Join(seeds, ",")
	for id := 1; id <= opts.N; id++ {
		dataDir := filepath.Join(c.opts.DataDir, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, err
		}
		advertised := c.proxies[id-1].addr()
		args := []string{"--advertised-rpc-addr", advertised, "--seeds", c.seeds, "--rack", opts.Racks[id-1]}
		if opts.SimulatePowerLoss {
			args = append(args, "--simulate-power-loss")
		}
		if opts.RPCTLS != nil {
			leaf, err := opts.RPCTLS.Issue(pkix.Name{CommonName: fmt.Sprintf("broker-%d", id)})
			if err != nil {
				return nil, err
			}
			args = append(args, "--rpc-tls-enabled", "true", "--rpc-tls-truststore-location", leaf.CAFile,
				"--rpc-tls-certificate-location", leaf.CertFile, "--rpc-tls-key-location", leaf.KeyFile)
		}
		c.brokers = append(c.brokers, &Broker{AdvertisedRPCAddr: advertised, Broker: harness.New(harness.Options{
			ID: id, Binary: bin, DataDir: dataDir,
			LogPath:  filepath.Join(c.opts.LogDir, fmt.Sprintf("broker-%d.log", id)),
			LogLevel: opts.LogLevel, Args: append(args, opts.Args...),
			ReadyTimeout: opts.ReadyTimeout, StopTimeout: opts.StopTimeout, Logf: c.logf,
			Listeners: opts.Listeners, TLS: opts.TLS,
		})})
	}

	// The proxies are the seeds, so a broker whose port was taken between the probe and its
	// bind can move to other ports without the others noticing.
	errs := harness.Together(c.brokers, func(b *Broker) error {
		return b.LaunchOnFreePorts(ctx, func() { c.proxies[b.ID-1].setTarget(b.RPCAddr) })
	})
	for i, e := range errs {
		if e != nil {
			return nil, fmt.Errorf("starting broker %d: %w\nlog tail:\n%s", i+1, e, harness.TailFile(c.brokers[i].LogPath, 40))
		}
	}
	if err := c.WaitFormed(ctx); err != nil {
		return nil, err
	}
	c.logf("cluster of %d formed; seeds %s", opts.N, c.seeds)
	return c, nil
}

// newProxyTLS gives the proxies one certificate of ca, as server to the diallers and as
// client to the brokers. The brokers dial the proxies, and the proxies the brokers, by
// 127.0.0.1, which the certificate names.
func newProxyTLS(ca *tlstest.CA) (*proxyTLS, error) {
	leaf, err := ca.Issue(pkix.Name{CommonName: "chaos-link-proxy"})
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(leaf.CertFile, leaf.KeyFile)
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(leaf.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("faults: no certificate in %s", leaf.CAFile)
	}
	return &proxyTLS{
		server: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		client: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
	}, nil
}

func (c *Cluster) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.evMu.Lock()
	if c.events != nil {
		fmt.Fprintf(c.events, "%s %s\n", time.Now().Format("15:04:05.000000"), msg)
	}
	c.evMu.Unlock()
	if c.opts.Logf != nil {
		c.opts.Logf("harness: %s", msg)
	}
}

// N returns the number of brokers.
func (c *Cluster) N() int { return len(c.brokers) }

// LogDir returns the folder holding the broker logs and harness.log.
func (c *Cluster) LogDir() string { return c.opts.LogDir }

// Broker returns broker id (1..N). It panics on an id out of range.
func (c *Cluster) Broker(id int) *Broker { return c.brokers[id-1] }

// KafkaAddrs returns every broker's Kafka address, in id order.
func (c *Cluster) KafkaAddrs() []string {
	out := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.KafkaAddr
	}
	return out
}

// ListenerAddrs returns every broker's address of the further Kafka listener name
// (Options.Listeners), in id order.
func (c *Cluster) ListenerAddrs(name string) []string {
	out := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.ListenerAddrs[name]
	}
	return out
}

// Client returns a franz-go client seeded with every broker; the caller closes it.
func (c *Cluster) Client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(c.KafkaAddrs()...), kgo.MetadataMinAge(100 * time.Millisecond), kgo.ClientID("cairn-chaos")}
	return kgo.NewClient(append(base, opts...)...)
}

// WaitFormed waits until every running broker lists all N brokers in its metadata (a
// broker the schedule has down is not waited for).
func (c *Cluster) WaitFormed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	return harness.WaitListedSkippingDown(ctx, len(c.brokers), c.common()...)
}

func (c *Cluster) common() []*harness.Broker {
	out := make([]*harness.Broker, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.Broker
	}
	return out
}

func (c *Cluster) broker(id int) (*Broker, error) {
	if id < 1 || id > len(c.brokers) {
		return nil, fmt.Errorf("faults: no broker %d (brokers are 1..%d)", id, len(c.brokers))
	}
	return c.brokers[id-1], nil
}

// running returns broker id if its process is alive, or an error.
func (c *Cluster) running(id int) (*Broker, error) {
	b, err := c.broker(id)
	if err != nil {
		return nil, err
	}
	if !b.Running() {
		return nil, fmt.Errorf("broker %d is not running", id)
	}
	return b, nil
}

// on runs f on broker id, or returns why there is no such broker.
func (c *Cluster) on(id int, f func(*Broker) error) error {
	b, err := c.broker(id)
	if err != nil {
		return err
	}
	return f(b)
}

// Kill9 kills broker id with SIGKILL (paused or not) and waits until it is reaped.
func (c *Cluster) Kill9(id int) error { return c.on(id, (*Broker).Kill) }

// Pause stops broker id with SIGSTOP: its sockets stay open, it answers nothing.
func (c *Cluster) Pause(id int) error { return c.on(id, (*Broker).Pause) }

// Resume continues a paused broker with SIGCONT.
func (c *Cluster) Resume(id int) error { return c.on(id, (*Broker).Resume) }

// Stop stops broker id gracefully: SIGTERM (and SIGCONT if paused), then waits up to
// StopTimeout for exit code 0. Past the timeout the broker is killed; either way a stop
// that does not end in exit code 0 is an error. A broker that is not running is an error.
func (c *Cluster) Stop(id int) error {
	b, err := c.running(id)
	if err != nil {
		return err
	}
	return b.Stop()
}

// Start starts broker id again (after Kill9 or Stop) on its addresses and waits until it
// is ready. A start that finds one of its ports taken by another process is tried again
// (see harness.LaunchOnFixedPorts): the session is about cairn's faults, not the machine's.
func (c *Cluster) Start(ctx context.Context, id int) error {
	return c.on(id, func(b *Broker) error { return b.LaunchOnFixedPorts(ctx) })
}

// StartAll starts the given brokers again together, as Start does: a restarted broker is
// ready only once a quorum of the controller is up, which may need the others.
func (c *Cluster) StartAll(ctx context.Context, ids ...int) error {
	bs := make([]*harness.Broker, len(ids))
	for i, id := range ids {
		b, err := c.broker(id)
		if err != nil {
			return err
		}
		bs[i] = b.Broker
	}
	return errors.Join(harness.Together(bs, func(b *harness.Broker) error { return b.LaunchOnFixedPorts(ctx) })...)
}

// Restart stops broker id gracefully (see Stop) and starts it again.
func (c *Cluster) Restart(ctx context.Context, id int) error {
	if err := c.Stop(id); err != nil {
		return err
	}
	return c.Start(ctx, id)
}

// PowerLoss cuts the power of the given brokers (kill -9 of each, one after another with
// no pause, under --simulate-power-loss: what they had not fsynced is gone), then starts
// them all again together and waits until each is ready. With no ids, every broker loses
// power.
func (c *Cluster) PowerLoss(ctx context.Context, ids ...int) error {
	if !c.opts.SimulatePowerLoss {
		return errors.New("faults: PowerLoss needs Options.SimulatePowerLoss")
	}
	if len(ids) == 0 {
		for id := 1; id <= len(c.brokers); id++ {
			ids = append(ids, id)
		}
	}
	var victims []*harness.Broker
	for _, id := range ids {
		b, err := c.running(id)
		if err != nil {
			return err
		}
		victims = append(victims, b.Broker)
	}
	c.logf("power loss of brokers %v", ids)
	if err := harness.Kill(victims...); err != nil {
		return err
	}
	return c.StartAll(ctx, ids...)
}

// Cut blocks inter-broker traffic from broker from to broker to: new connections are
// refused, open ones are closed. The other direction is untouched.
func (c *Cluster) Cut(from, to int) error {
	if _, err := c.broker(from); err != nil {
		return err
	}
	if _, err := c.broker(to); err != nil {
		return err
	}
	c.logf("cut %d -> %d", from, to)
	c.proxies[to-1].cut(int32(from))
	return nil
}

// Heal lets traffic from broker from to broker to through again.
func (c *Cluster) Heal(from, to int) error {
	if _, err := c.broker(from); err != nil {
		return err
	}
	if _, err := c.broker(to); err != nil {
		return err
	}
	c.logf("heal %d -> %d", from, to)
	c.proxies[to-1].heal(int32(from))
	return nil
}

// IsCut reports whether traffic from broker from to broker to is cut.
func (c *Cluster) IsCut(from, to int) bool {
	if from < 1 || from > len(c.brokers) || to < 1 || to > len(c.brokers) {
		return false
	}
	return c.proxies[to-1].isCut(int32(from))
}

// Partition cuts both directions between brokers a and b.
func (c *Cluster) Partition(a, b int) error {
	return errors.Join(c.Cut(a, b), c.Cut(b, a))
}

// Isolate cuts broker id from every other broker, both directions.
func (c *Cluster) Isolate(id int) error {
	var errs []error
	for o := 1; o <= len(c.brokers); o++ {
		if o != id {
			errs = append(errs, c.Partition(id, o))
		}
	}
	return errors.Join(errs...)
}

// RackOf returns broker id's rack ("" for an id out of range).
func (c *Cluster) RackOf(id int) string {
	if id < 1 || id > len(c.opts.Racks) {
		return ""
	}
	return c.opts.Racks[id-1]
}

// Racks returns the distinct racks, in the order of their first broker.
func (c *Cluster) Racks() []string {
	var out []string
	for _, r := range c.opts.Racks {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// RackMembers returns the ids of rack's brokers, in order (none for an unknown rack).
func (c *Cluster) RackMembers(rack string) []int {
	var ids []int
	for i, r := range c.opts.Racks {
		if r == rack {
			ids = append(ids, i+1)
		}
	}
	return ids
}

// IsolateRack cuts both directions between every broker of rack and every broker outside
// it, as a zone losing its network does; the rack's brokers still reach each other.
// HealAll heals it.
func (c *Cluster) IsolateRack(rack string) error {
	members := c.RackMembers(rack)
	if len(members) == 0 {
		return fmt.Errorf("faults: no broker is in rack %q", rack)
	}
	var errs []error
	for _, in := range members {
		for out := 1; out <= len(c.brokers); out++ {
			if c.RackOf(out) != rack {
				errs = append(errs, c.Partition(in, out))
			}
		}
	}
	return errors.Join(errs...)
}

// SetLinkDelay delays the inter-broker direction from → to by d from the next chunk on,
// open connections included; d <= 0 removes the delay.
func (c *Cluster) SetLinkDelay(from, to int, d time.Duration) error {
	if _, err := c.broker(from); err != nil {
		return err
	}
	if _, err := c.broker(to); err != nil {
		return err
	}
	c.logf("delay %d -> %d: %v", from, to, d)
	c.proxies[to-1].setDelay(int32(from), d)
	return nil
}

// HealAll heals every cut.
func (c *Cluster) HealAll() {
	c.logf("heal all")
	for _, p := range c.proxies {
		p.healAll()
	}
}

// ProxyStats returns what broker id's proxy did so far.
func (c *Cluster) ProxyStats(id int) ProxyStats { return c.proxies[id-1].stats() }

// ErrNoReplica is returned by PartitionStatus when the broker has no replica of the
// partition.
var ErrNoReplica = harness.ErrNoReplica

// PartitionStatus is a broker's admin view of one partition (GET /v1/partitions/{t}/{p}).
type PartitionStatus = harness.PartitionStatus

// PartitionStatus asks broker id's admin API for its view of topic/partition, within 2 s.
func (c *Cluster) PartitionStatus(ctx context.Context, id int, topic string, partition int32) (PartitionStatus, error) {
	b, err := c.broker(id)
	if err != nil {
		return PartitionStatus{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	hc := c.opts.AdminHTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return b.PartitionStatusWith(ctx, hc, topic, partition)
}

// Close stops every broker (SIGCONT if paused, SIGTERM, then SIGKILL past StopTimeout),
// closes the proxies and removes the folders the harness made (never LogDir). It reports
// brokers that did not stop with exit code 0 and brokers that had died on their own. It
// is safe to call more than once.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		errs := harness.StopAll(c.common()...)
		for _, p := range c.proxies {
			p.close()
		}
		for _, d := range c.cleanup {
			os.RemoveAll(d)
		}
		c.logf("closed")
		c.evMu.Lock()
		if c.events != nil {
			c.events.Close()
			c.events = nil
		}
		c.evMu.Unlock()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
