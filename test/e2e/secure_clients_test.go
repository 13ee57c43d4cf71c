package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"

	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
	"github.com/cairn-io/cairn/test/harness"
)

// clientSecurity is how a client reaches a secured listener, in the terms every client
// shares: a security protocol, a SASL mechanism and user, and PEM files (the CA that
// signed the broker's certificate, and the client's own certificate and key for mTLS).
// Empty fields are left out of each client's configuration.
type clientSecurity struct {
	Protocol  string `json:"protocol"`
	Mechanism string `json:"mechanism,omitempty"`
	User      string `json:"username,omitempty"`
	Password  string `json:"password,omitempty"`
	CA        string `json:"ca,omitempty"`
	Cert      string `json:"cert,omitempty"`
	Key       string `json:"key,omitempty"`
}

func (s clientSecurity) withUser(user, password string) clientSecurity {
	s.User, s.Password = user, password
	return s
}

func (s clientSecurity) withMechanism(m string) clientSecurity {
	s.Mechanism = m
	return s
}

func (s clientSecurity) withCert(l tlstest.Leaf) clientSecurity {
	s.Cert, s.Key = l.CertFile, l.KeyFile
	return s
}

func (s clientSecurity) tls() bool { return s.Protocol == "SSL" || s.Protocol == "SASL_SSL" }
func (s clientSecurity) sasl() bool {
	return s.Protocol == "SASL_PLAINTEXT" || s.Protocol == "SASL_SSL"
}

// pyJSON is the SECURITY argument of clients/secure_client.py.
func (s clientSecurity) pyJSON(t testing.TB) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kcatArgs are librdkafka's -X properties for s.
func (s clientSecurity) kcatArgs() []string {
	args := []string{"-X", "security.protocol=" + s.Protocol}
	for _, kv := range [][2]string{{"sasl.mechanisms", s.Mechanism}, {"sasl.username", s.User}, {"sasl.password", s.Password},
		{"ssl.ca.location", s.CA}, {"ssl.certificate.location", s.Cert}, {"ssl.key.location", s.Key}} {
		if kv[1] != "" {
			args = append(args, "-X", kv[0]+"="+kv[1])
		}
	}
	return args
}

// tlsConfig trusts s.CA and presents s.Cert when set.
func (s clientSecurity) tlsConfig(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(s.CA)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"}
	cfg.RootCAs.AppendCertsFromPEM(pem)
	if s.Cert != "" {
		c, err := tls.LoadX509KeyPair(s.Cert, s.Key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

// kgoOpts are franz-go's options for s (pkg/sasl/scram and pkg/sasl/plain).
func (s clientSecurity) kgoOpts(t testing.TB) []kgo.Opt {
	t.Helper()
	var opts []kgo.Opt
	if s.tls() {
		opts = append(opts, kgo.DialTLSConfig(s.tlsConfig(t)))
	}
	if s.sasl() {
		switch s.Mechanism {
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()))
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()))
		default:
			t.Fatalf("no franz-go mechanism %q", s.Mechanism)
		}
	}
	return opts
}

// kgoClient is a franz-go client of seeds configured by s.
func (s clientSecurity) kgoClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second), kgo.ClientID("cairn-e2e-secure")}, s.kgoOpts(t)...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// saramaSCRAM adapts xdg-go/scram's client conversation to sarama's SCRAMClient, as
// sarama's own examples do: sarama ships no SCRAM implementation.
type saramaSCRAM struct {
	hash xscram.HashGeneratorFcn
	conv *xscram.ClientConversation
}

func (c *saramaSCRAM) Begin(user, password, authzID string) error {
	cl, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = cl.NewConversation()
	return nil
}

func (c *saramaSCRAM) Step(challenge string) (string, error) { return c.conv.Step(challenge) }
func (c *saramaSCRAM) Done() bool                            { return c.conv.Done() }

// saramaConfigFor is saramaConfig over s (the SaslAuthenticate flow of a v1 handshake).
func (s clientSecurity) saramaConfigFor(t testing.TB) *sarama.Config {
	t.Helper()
	cfg := saramaConfig()
	if s.tls() {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, s.tlsConfig(t)
	}
	if s.sasl() {
		cfg.Net.SASL.Enable, cfg.Net.SASL.Handshake, cfg.Net.SASL.Version = true, true, sarama.SASLHandshakeV1
		cfg.Net.SASL.Mechanism = sarama.SASLMechanism(s.Mechanism)
		cfg.Net.SASL.User, cfg.Net.SASL.Password = s.User, s.Password
		switch s.Mechanism {
		case sarama.SASLTypeSCRAMSHA512:
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: xscram.SHA512} }
		case sarama.SASLTypeSCRAMSHA256:
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: xscram.SHA256} }
		}
	}
	return cfg
}

// issueClientCert issues a client certificate of m's CA for the subject CN=cn,O=org.
func issueClientCert(t testing.TB, m *tlsMaterial, cn, org string) tlstest.Leaf {
	t.Helper()
	l, err := m.ca.Issue(pkix.Name{CommonName: cn, Organization: []string{org}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// startSecureCluster starts n founding brokers with a PLAINTEXT listener (for the test's
// own administration) beside listeners, served with files and extra start flags.
func startSecureCluster(t *testing.T, n int, listeners []harness.Listener, files harness.TLSFiles, args ...string) []*Broker {
	t.Helper()
	addrs := make([][3]string, n)
	var seeds []string
	for i := range addrs {
		addrs[i] = [3]string{freeAddr(t), freeAddr(t), freeAddr(t)}
		seeds = append(seeds, addrs[i][2])
	}
	bs := make([]*Broker, n)
	for i := range bs {
		bs[i] = newBroker(t, BrokerOpts{NodeID: i + 1, Addrs: &addrs[i], Args: append([]string{"--seeds", strings.Join(seeds, ",")}, args...),
			Listeners: listeners, TLS: files})
	}
	for _, b := range bs {
		t.Cleanup(b.cleanupStop)
	}
	launchTogether(t, bs)
	waitListed(t, bs)
	return bs
}

func listenerAddrs(bs []*Broker, name string) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.ListenerAddrs[name])
	}
	return out
}

// createSCRAMUser creates user through the first broker's PLAINTEXT listener and waits
// until every broker describes the credential: each authenticates from its own copy.
func createSCRAMUser(t *testing.T, bs []*Broker, user, mechanism, password string) {
	t.Helper()
	mech := kadm.ScramSha512
	if mechanism == "SCRAM-SHA-256" {
		mech = kadm.ScramSha256
	}
	res, err := bs[0].Admin(t).AlterUserSCRAMs(ctxFor(t, 30*time.Second), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Password: password}})
	if err != nil || res[user].Err != nil {
		t.Fatalf("AlterUserSCRAMs %s: %v %+v", user, err, res)
	}
	waitUserEverywhere(t, bs, user)
}

func waitUserEverywhere(t *testing.T, bs []*Broker, user string) {
	t.Helper()
	for _, b := range bs {
		adm := b.Admin(t)
		waitFor(t, 20*time.Second, func() bool {
			d, err := adm.DescribeUserSCRAMs(ctxFor(t, 10*time.Second), user)
			return err == nil && d[user].Err == nil && len(d[user].CredInfos) > 0
		})
	}
}

// sortedRecords orders what a client wrote or read by partition, offset, key and value,
// so that two views of one topic compare equal whatever order they arrived in.
func sortedRecords(rs []ackedRecord) []ackedRecord {
	out := slices.Clone(rs)
	slices.SortFunc(out, func(a, b ackedRecord) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		if a.Offset != b.Offset {
			return int(a.Offset - b.Offset)
		}
		return strings.Compare(a.Key+"\x00"+a.Value, b.Key+"\x00"+b.Value)
	})
	return out
}

// checkReadBack fails unless read is exactly wrote: the same records at the same
// partitions and offsets, nothing missing, nothing extra, nothing twice.
func checkReadBack(t *testing.T, who string, wrote, read []ackedRecord) {
	t.Helper()
	w, r := sortedRecords(wrote), sortedRecords(read)
	if !slices.Equal(w, r) {
		t.Fatalf("%s read back %d records, wrote %d; first written %v, first read %v", who, len(r), len(w), head(fmtRecords(w), 5), head(fmtRecords(r), 5))
	}
}

func fmtRecords(rs []ackedRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%d@%d %s=%s", r.Partition, r.Offset, r.Key, r.Value)
	}
	return out
}

func pyAcked(rs []pyRecord) []ackedRecord {
	out := make([]ackedRecord, len(rs))
	for i, r := range rs {
		out[i] = r.acked()
	}
	return out
}
