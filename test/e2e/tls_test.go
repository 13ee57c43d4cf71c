package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
	"github.com/cairn-io/cairn/test/harness"
)

// tlsMaterial is a test CA, the broker certificate served from fixed paths (so that a test
// can rotate it by replacing the files) and a client certificate.
type tlsMaterial struct {
	ca                *tlstest.CA
	certFile, keyFile string
	client            tls.Certificate
	pool              *x509.CertPool
}

func newTLSMaterial(t *testing.T) *tlsMaterial {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "cairn-e2e")
	if err != nil {
		t.Fatal(err)
	}
	m := &tlsMaterial{ca: ca, certFile: filepath.Join(dir, "broker.pem"), keyFile: filepath.Join(dir, "broker-key.pem")}
	m.rotate(t)
	cl, err := ca.Issue(pkix.Name{CommonName: "alice", Organization: []string{"Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.client, err = tls.LoadX509KeyPair(cl.CertFile, cl.KeyFile); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	m.pool = x509.NewCertPool()
	m.pool.AppendCertsFromPEM(pem)
	return m
}

// rotate issues a new broker certificate and moves it (and its key) over the served
// files, each by an atomic rename, as a certificate manager does.
func (m *tlsMaterial) rotate(t *testing.T) {
	t.Helper()
	leaf, err := m.ca.Issue(pkix.Name{CommonName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(leaf.CertFile, m.certFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(leaf.KeyFile, m.keyFile); err != nil {
		t.Fatal(err)
	}
}

func (m *tlsMaterial) files(clientAuth string) harness.TLSFiles {
	return harness.TLSFiles{Cert: m.certFile, Key: m.keyFile, CA: m.ca.CertFile, ClientAuth: clientAuth}
}

// clientConfig trusts the test CA and, with cert, presents the client certificate.
func (m *tlsMaterial) clientConfig(cert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: m.pool, ServerName: "127.0.0.1"}
	if cert {
		cfg.Certificates = []tls.Certificate{m.client}
	}
	return cfg
}

var sslListener = []harness.Listener{{Name: "SSL", Protocol: "SSL"}}

// startSSLCluster starts n founding brokers with a PLAINTEXT and an SSL listener.
func startSSLCluster(t *testing.T, n int, files harness.TLSFiles) []*Broker {
	t.Helper()
	addrs := make([][3]string, n)
	var seeds []string
	for i := range addrs {
		addrs[i] = [3]string{freeAddr(t), freeAddr(t), freeAddr(t)}
		seeds = append(seeds, addrs[i][2])
	}
	bs := make([]*Broker, n)
	for i := range bs {
		bs[i] = newBroker(t, BrokerOpts{NodeID: i + 1, Addrs: &addrs[i], Args: []string{"--seeds", strings.Join(seeds, ",")},
			Listeners: sslListener, TLS: files})
	}
	for _, b := range bs {
		t.Cleanup(b.cleanupStop)
	}
	launchTogether(t, bs)
	waitListed(t, bs)
	return bs
}

func sslAddrs(bs []*Broker) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.ListenerAddrs["SSL"])
	}
	return out
}

// sslClient is a franz-go client of the SSL listeners.
func sslClient(t *testing.T, m *tlsMaterial, seeds []string, cert bool, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(m.clientConfig(cert)),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.RetryTimeout(30 * time.Second), kgo.ClientID("cairn-e2e-tls")}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// metadataAddrs is the broker addresses a Metadata request answers with, by node id.
func metadataAddrs(t *testing.T, adm *kadm.Client) map[int32]string {
	t.Helper()
	md, err := adm.BrokerMetadata(ctxFor(t, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]string{}
	for _, b := range md.Brokers {
		out[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	return out
}

// TestSSLListenerCluster: a 3-broker cluster with a PLAINTEXT and an SSL listener serves a
// franz-go producer and group consumer over SSL end to end (Metadata, produce to each
// leader, FindCoordinator, fetch), and each listener's Metadata names that listener's
// addresses only.
func TestSSLListenerCluster(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	bs := startSSLCluster(t, 3, m.files(""))

	cl := sslClient(t, m, sslAddrs(bs), false)
	adm := kadm.NewClient(cl)
	wantSSL, wantPlain := map[int32]string{}, map[int32]string{}
	for _, b := range bs {
		wantSSL[int32(b.ID)], wantPlain[int32(b.ID)] = b.ListenerAddrs["SSL"], b.KafkaAddr
	}
	if got := metadataAddrs(t, adm); !mapsEqual(got, wantSSL) {
		t.Fatalf("Metadata on the SSL listener: %v, want the SSL addresses %v", got, wantSSL)
	}
	if got := metadataAddrs(t, bs[0].Admin(t)); !mapsEqual(got, wantPlain) {
		t.Fatalf("Metadata on the PLAINTEXT listener: %v, want %v", got, wantPlain)
	}
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctxFor(t, 15*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range dc.Brokers {
		if got := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))); got != wantSSL[b.NodeID] {
			t.Errorf("DescribeCluster on SSL: broker %d at %s, want %s", b.NodeID, got, wantSSL[b.NodeID])
		}
	}

	createReplicatedTopic(t, adm, "over-tls", 3, 3)
	var recs []*kgo.Record
	for i := range 60 {
		recs = append(recs, &kgo.Record{Topic: "over-tls", Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce over SSL: %v", err)
	}
	cons := sslClient(t, m, sslAddrs(bs), false, kgo.ConsumeTopics("over-tls"), kgo.ConsumerGroup("tls-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	ctx := ctxFor(t, 60*time.Second)
	for len(seen) < len(recs) {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records over SSL", len(seen), len(recs))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if err := cons.CommitUncommittedOffsets(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatalf("commit through the coordinator found over SSL: %v", err)
	}
}

func mapsEqual(a, b map[int32]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestKcatOverSSL: kcat (librdkafka) produces and consumes over the SSL listener,
// verifying the broker's certificate against the CA.
func TestKcatOverSSL(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	m := newTLSMaterial(t)
	b := startBroker(t, BrokerOpts{Listeners: sslListener, TLS: m.files("")})
	createTopic(t, b.Admin(t), "kcat-tls", 1, nil)
	ssl := []string{"-b", b.ListenerAddrs["SSL"], "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + m.ca.CertFile}
	want := kcatLines("tls", 50)
	r := run(t, 60*time.Second, strings.Join(want, "\n")+"\n", kcat, append([]string{"-P", "-t", "kcat-tls", "-K", ":"}, ssl...)...)
	if r.Err != nil || strings.Contains(r.Stderr, "ERROR") {
		t.Fatalf("kcat -P over SSL: %s", r)
	}
	r = run(t, 60*time.Second, "", kcat, append([]string{"-C", "-t", "kcat-tls", "-o", "beginning", "-e", "-c", fmt.Sprint(len(want)), "-f", `%k:%s\n`}, ssl...)...)
	if got := lines(r.Stdout); r.Err != nil || !slices.Equal(got, want) {
		t.Fatalf("kcat -C over SSL read %d of %d lines: %s", len(got), len(want), r)
	}
	// librdkafka's Metadata on the SSL listener names the SSL address.
	r = run(t, 30*time.Second, "", kcat, append([]string{"-L", "-J"}, ssl...)...)
	if r.Err != nil || !strings.Contains(r.Stdout, b.ListenerAddrs["SSL"]) || strings.Contains(r.Stdout, b.KafkaAddr) {
		t.Fatalf("kcat -L over SSL does not list only the SSL address %s: %s", b.ListenerAddrs["SSL"], r)
	}
}

// TestMutualTLSRequired: with ssl.client.auth=required, a client without a certificate is
// refused at the handshake, one with a certificate of the CA is served, and the PLAINTEXT
// listener is unaffected.
func TestMutualTLSRequired(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	b := startBroker(t, BrokerOpts{Listeners: sslListener, TLS: m.files("required")})
	ssl := []string{b.ListenerAddrs["SSL"]}

	anon := sslClient(t, m, ssl, false, kgo.RetryTimeout(2*time.Second), kgo.RequestRetries(0))
	if _, err := kadm.NewClient(anon).BrokerMetadata(ctxFor(t, 10*time.Second)); err == nil {
		t.Fatal("a client without a certificate was served on an ssl.client.auth=required listener")
	}
	withCert := sslClient(t, m, ssl, true)
	createTopic(t, kadm.NewClient(withCert), "mtls", 1, nil)
	if err := withCert.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: "mtls", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce with a client certificate: %v", err)
	}
	// A fetch large enough for the file-range path (sendfile on plaintext) comes back whole
	// and decrypted.
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := withCert.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: "mtls", Value: big}).FirstErr(); err != nil {
		t.Fatalf("produce 200 KiB with a client certificate: %v", err)
	}
	cons := sslClient(t, m, ssl, true, kgo.ConsumeTopics("mtls"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxFor(t, 30*time.Second)
	var got [][]byte
	for len(got) < 2 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, r.Value) })
	}
	if len(got) != 2 || string(got[0]) != "x" || !bytes.Equal(got[1], big) {
		t.Fatalf("fetched %d records over mTLS; the 200 KiB one intact: %v", len(got), len(got) == 2 && bytes.Equal(got[1], big))
	}
	if _, err := b.Admin(t).BrokerMetadata(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatalf("PLAINTEXT listener: %v", err)
	}
}

// servedSerial is the serial number of the certificate a new TLS connection to addr gets.
func servedSerial(t *testing.T, m *tlsMaterial, addr string) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, m.clientConfig(false))
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestTLSCertificateRotation: replacing the certificate files changes what new connections
// are served, without a restart, while a connection opened before keeps working.
func TestTLSCertificateRotation(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	b := startBroker(t, BrokerOpts{Listeners: sslListener, TLS: m.files("")})
	addr := b.ListenerAddrs["SSL"]
	before := servedSerial(t, m, addr)

	tc, err := tls.Dial("tcp", addr, m.clientConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	open := &rawConn{t: t, c: tc, r: bufio.NewReader(tc)}
	t.Cleanup(func() { tc.Close() })
	if _, err := open.roundTrip(kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatalf("ApiVersions before the rotation: %v", err)
	}

	m.rotate(t)
	waitFor(t, 15*time.Second, func() bool { return servedSerial(t, m, addr) != before })

	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	if _, err := open.roundTrip(req); err != nil {
		t.Fatalf("the connection opened before the rotation stopped working: %v", err)
	}
	cl := sslClient(t, m, []string{addr}, false)
	if _, err := kadm.NewClient(cl).BrokerMetadata(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatalf("a new client after the rotation: %v", err)
	}
}

// TestBadTLSInput: a plaintext Kafka client on the SSL port, a TLS record of garbage and a
// client that says nothing are each closed, and the listener still serves.
func TestBadTLSInput(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	b := startBroker(t, BrokerOpts{Listeners: sslListener, TLS: m.files("")})
	addr := b.ListenerAddrs["SSL"]

	plain := dialRaw(t, addr)
	if _, err := plain.send(kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatal(err)
	}
	if got, err := plain.waitClosed(15 * time.Second); err != nil {
		t.Fatalf("plaintext ApiVersions on the SSL port: %v (got %q)", err, got)
	} else if len(got) >= 8 && got[0] == 0 {
		t.Fatalf("a plaintext client on the SSL port got a Kafka answer: %q", got)
	}

	garbage := dialRaw(t, addr)
	if err := garbage.writeRaw(append([]byte{0x16, 0x03, 0x01, 0x01, 0x00}, make([]byte, 256)...)); err != nil {
		t.Fatal(err)
	}
	if _, err := garbage.waitClosed(15 * time.Second); err != nil {
		t.Fatalf("garbage handshake: %v", err)
	}

	// A client that connects and sends nothing is closed by the 10 s handshake deadline.
	silent := dialRaw(t, addr)
	start := time.Now()
	if _, err := silent.waitClosed(30 * time.Second); err != nil {
		t.Fatalf("silent client: %v", err)
	}
	if held := time.Since(start); held > 20*time.Second {
		t.Fatalf("silent client held %v", held)
	}

	cl := sslClient(t, m, []string{addr}, false)
	if _, err := kadm.NewClient(cl).BrokerMetadata(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatalf("SSL listener after bad input: %v", err)
	}
	// Each refusal is counted where an operator looks.
	refused := func(reason string) float64 {
		v, _ := b.Metric(t, "cairn_kafka_tls_refused_connections_total", `{reason="`+reason+`"}`)
		return v
	}
	if p, h := refused("plaintext"), refused("handshake"); p != 1 || h != 3 {
		t.Errorf("refusals counted: plaintext %v, handshake %v; want 1 and 3", p, h)
	}
	if strings.Contains(harness.TailFile(b.LogPath, 200), "panic") {
		t.Fatal("the broker logged a panic")
	}
}

// TestListenerStartRefusals: `cairn start` with listeners it cannot serve exits non-zero
// at once and says why.
func TestListenerStartRefusals(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown-protocol", []string{"--listeners", "PLAINTEXT://" + freeAddr(t), "--listener-security-protocol-map", "PLAINTEXT:TLS"}, "unknown security protocol"},
		{"ssl-without-certificate", []string{"--listeners", "SSL://" + freeAddr(t)}, "a TLS listener needs a PEM certificate and key"},
		{"advertised-not-listened", []string{"--listeners", "PLAINTEXT://" + freeAddr(t), "--advertised-listeners", "SSL://localhost:9094"}, "not in listeners"},
		{"with-kafka-addr", []string{"--listeners", "PLAINTEXT://" + freeAddr(t), "--kafka-addr", freeAddr(t)}, "listeners and kafka.addr are both set"},
		{"same-port", []string{"--listeners", "PLAINTEXT://127.0.0.1:19092,SSL://127.0.0.1:19092",
			"--ssl-certificate-location", m.certFile, "--ssl-key-location", m.keyFile}, "both use port 19092"},
		{"sasl-gssapi", []string{"--listeners", "SASL_SSL://" + freeAddr(t), "--ssl-certificate-location", m.certFile, "--ssl-key-location", m.keyFile,
			"--sasl-enabled-mechanisms", "GSSAPI"}, "GSSAPI is not served"},
		{"java-keystore", []string{"--kafka-addr", freeAddr(t), "--ssl-keystore-location", "/etc/kafka/broker.jks"}, "PEM files"},
		{"unreadable-certificate", []string{"--listeners", "SSL://" + freeAddr(t), "--ssl-certificate-location", "/nonexistent.pem", "--ssl-key-location", m.keyFile}, "/nonexistent.pem"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"start", "--node-id", "1", "--data-dir", t.TempDir(), "--admin-addr", freeAddr(t), "--rpc-addr", freeAddr(t)}, c.args...)
			r := run(t, 30*time.Second, "", cairnBin, args...)
			if r.Err == nil || strings.Contains(r.Err.Error(), "did not finish") {
				t.Fatalf("cairn %s: want a prompt non-zero exit: %s", strings.Join(args, " "), r)
			}
			if !strings.Contains(r.Stderr, c.want) {
				t.Errorf("cairn %s: stderr does not mention %q:\n%s", strings.Join(args, " "), c.want, r.Stderr)
			}
		})
	}
}

// TestListenersDescribed: DescribeConfigs reports the listener properties a broker was
// started with.
func TestListenersDescribed(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	b := startBroker(t, BrokerOpts{Listeners: sslListener, TLS: m.files("")})
	rcs, err := b.Admin(t).DescribeBrokerConfigs(ctxFor(t, 10*time.Second), 1)
	if err != nil || len(rcs) != 1 {
		t.Fatalf("DescribeConfigs broker 1: %v %+v", err, rcs)
	}
	got := map[string]string{}
	for _, c := range rcs[0].Configs {
		got[c.Key] = c.MaybeValue()
	}
	want := "PLAINTEXT://" + b.KafkaAddr + ",SSL://" + b.ListenerAddrs["SSL"]
	if got["listeners"] != want || got["ssl.certificate.location"] != m.certFile {
		t.Errorf("listeners %q, ssl.certificate.location %q; want %q, %q", got["listeners"], got["ssl.certificate.location"], want, m.certFile)
	}
}
