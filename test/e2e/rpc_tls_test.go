package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
	"github.com/cairn-io/cairn/test/harness"
)

// rpcTLSArgs are the start flags of inter-broker mutual TLS with a fresh certificate from ca.
func rpcTLSArgs(t *testing.T, ca *tlstest.CA, name string) []string {
	t.Helper()
	leaf, err := ca.Issue(pkix.Name{CommonName: name})
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--rpc-tls-enabled", "true", "--rpc-tls-certificate-location", leaf.CertFile,
		"--rpc-tls-key-location", leaf.KeyFile, "--rpc-tls-truststore-location", leaf.CAFile}
}

// inboundTLSFailures sums the cluster's count of inbound inter-broker handshakes refused.
func inboundTLSFailures(t *testing.T, bs []*Broker) float64 {
	var sum float64
	for _, b := range bs {
		v, ok := b.Metric(t, "cairn_rpc_inbound_tls_failures_total", "")
		if !ok {
			t.Fatalf("broker %d exports no cairn_rpc_inbound_tls_failures_total", b.opts.NodeID)
		}
		sum += v
	}
	return sum
}

// TestRPCMutualTLS: three brokers whose inter-broker transport is under mutual TLS form a
// cluster, replicate an RF=3 topic and acknowledge acks=all writes. A fourth broker with a
// certificate from another CA, and then one with TLS off, never join: the cluster counts
// the refused handshakes, and each newcomer's log says why it does not join.
func TestRPCMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	addrs := make([][3]string, n)
	var seeds []string
	for i := range addrs {
		addrs[i] = [3]string{freeAddr(t), freeAddr(t), freeAddr(t)}
		seeds = append(seeds, addrs[i][2])
	}
	bs := make([]*Broker, n)
	for i := range bs {
		args := append([]string{"--seeds", strings.Join(seeds, ",")}, rpcTLSArgs(t, ca, fmt.Sprintf("broker-%d", i+1))...)
		bs[i] = newBroker(t, BrokerOpts{NodeID: i + 1, Addrs: &addrs[i], Args: args})
	}
	for _, b := range bs {
		t.Cleanup(b.cleanupStop)
	}
	launchTogether(t, bs)
	waitListed(t, bs)

	createReplicatedTopic(t, bs[0].Admin(t), "tls", 3, 3)
	prod := clusterClient(t, bs, kgo.DefaultProduceTopic("tls"), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked := produceSync(t, prod, "tls", "r", 200)
	checkAckedReadable(t, acked, consumeAll(t, bs[2], "tls", 3, 200))
	waitFor(t, 30*time.Second, func() bool { return allInSync(bs, "tls", 3, 3) })
	rcs, err := bs[1].Admin(t).DescribeBrokerConfigs(ctxFor(t, 10*time.Second), 2)
	if err != nil || len(rcs) != 1 {
		t.Fatalf("DescribeConfigs broker 2: %v", err)
	}
	described := map[string]string{}
	for _, c := range rcs[0].Configs {
		described[c.Key] = c.MaybeValue() + " " + c.Source.String()
	}
	if got := described["rpc.tls.enabled"]; got != "true "+kmsg.ConfigSourceStaticBrokerConfig.String() {
		t.Errorf("DescribeConfigs rpc.tls.enabled: %q, want true as set at start", got)
	}
	if got := described["admin.auth"]; got != "none "+kmsg.ConfigSourceDefaultConfig.String() {
		t.Errorf("DescribeConfigs admin.auth: %q, want the default none", got)
	}
	if got := inboundTLSFailures(t, bs); got != 0 {
		t.Fatalf("the cluster's own brokers failed %v inbound TLS handshakes", got)
	}

	other, err := tlstest.NewCA(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		log  string // what the newcomer's log says
	}{
		{"a certificate of another CA", rpcTLSArgs(t, other, "broker-4"), "certificate signed by unknown authority"},
		{"TLS off", nil, "this node requires TLS on the inter-broker transport (rpc.tls.enabled)"},
	} {
		before := inboundTLSFailures(t, bs)
		stranger := newBroker(t, BrokerOpts{NodeID: 4, Args: append([]string{"--seeds", strings.Join(seeds, ",")}, c.args...)})
		stranger.KafkaAddr, stranger.AdminAddr, stranger.RPCAddr = freeAddr(t), freeAddr(t), freeAddr(t)
		// A broker is ready once its registration is applied: this one never is. Launch
		// waits for that until the test has seen what it needs, then kills it.
		ctx, cancel := context.WithCancel(context.Background())
		launched := make(chan error, 1)
		go func() { launched <- stranger.Launch(ctx) }()
		waitFor(t, 60*time.Second, func() bool {
			return inboundTLSFailures(t, bs) > before && stranger.LogContains(c.log) && stranger.LogContains("cannot join")
		})
		cancel()
		if err := <-launched; err == nil {
			t.Fatalf("%s: the broker became ready", c.name)
		}
		for _, b := range bs {
			md, err := b.Admin(t).BrokerMetadata(ctxFor(t, 10*time.Second))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if ids := md.Brokers.NodeIDs(); len(ids) != n || slices.Contains(ids, 4) {
				t.Fatalf("%s: broker %d lists brokers %v; views:\n%s", c.name, b.opts.NodeID, ids, harness.ClusterViews(common(bs)...))
			}
		}
	}
	// The cluster still takes acks=all writes on all three replicas.
	produceSync(t, prod, "tls", "after", 50)

	// Rotation: broker 1's certificate files are replaced in place by a new certificate
	// from the same CA. Broker 1 serves it to new connections without a restart, the
	// connections already open stay up, and replication goes on.
	fresh, err := ca.Issue(pkix.Name{CommonName: "broker-1-rotated"})
	if err != nil {
		t.Fatal(err)
	}
	args1 := bs[0].opts.Args
	certPath, keyPath := flagValue(args1, "--rpc-tls-certificate-location"), flagValue(args1, "--rpc-tls-key-location")
	replaceFile(t, keyPath, fresh.KeyFile)
	replaceFile(t, certPath, fresh.CertFile)
	probeLeaf, err := ca.Issue(pkix.Name{CommonName: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(probeLeaf.CertFile, probeLeaf.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	servedName := func() string {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", bs[0].RPCAddr,
			&tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{pair}})
		if err != nil {
			return "dial: " + err.Error()
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	waitFor(t, 30*time.Second, func() bool { return servedName() == "broker-1-rotated" })
	for _, b := range bs[1:] {
		if v, ok := b.Metric(t, "cairn_rpc_peer_connected", `{peer="1"}`); !ok || v != 1 {
			t.Fatalf("broker %d's connection to broker 1 after the rotation: %v %v", b.opts.NodeID, v, ok)
		}
	}
	bs[1].Restart() // its new connections to broker 1 handshake with the new certificate
	waitListed(t, bs)
	produceSync(t, prod, "tls", "rotated", 50)
	waitFor(t, 30*time.Second, func() bool { return allInSync(bs, "tls", 3, 3) })
}

// flagValue is the value following flag in args.
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// replaceFile puts src's content at dst as an operator should: written beside it, then
// renamed over it, so a reader never sees half a file.
func replaceFile(t *testing.T, dst, src string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}
