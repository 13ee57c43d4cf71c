package rpc

import (
	"context"
	"crypto/x509/pkix"
	"testing"

	"github.com/cairn-io/cairn/internal/tlsconf"
	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
)

// BenchmarkSendLoopback measures 100-byte messages from one node to another over loopback,
// through SendWait, until the receiver has them all.
func BenchmarkSendLoopback(b *testing.B) {
	benchmarkSend(b, testOptions(2, nil), testOptions(1, nil))
}

// BenchmarkSendLoopbackTLS is BenchmarkSendLoopback with mutual TLS, as a broker with
// rpc.tls.enabled runs it.
func BenchmarkSendLoopbackTLS(b *testing.B) {
	dir := b.TempDir()
	ca, err := tlstest.NewCA(dir, "cluster")
	if err != nil {
		b.Fatal(err)
	}
	node := func(id int32, cn string) Options {
		l, err := ca.Issue(pkix.Name{CommonName: cn})
		if err != nil {
			b.Fatal(err)
		}
		r, err := tlsconf.New(tlsconf.Files{Cert: l.CertFile, Key: l.KeyFile, CA: l.CAFile, ClientAuth: tlsconf.ClientAuthRequired})
		if err != nil {
			b.Fatal(err)
		}
		o := testOptions(id, nil)
		o.TLS = &TLSConfig{Server: r.ServerConfig(), Client: r.MutualClientConfig()}
		return o
	}
	benchmarkSend(b, node(2, "node2"), node(1, "node1"))
}

func benchmarkSend(b *testing.B, ro, to Options) {
	done := make(chan struct{})
	want := b.N
	n := 0
	ro.Handler = func(int32, uint8, []byte) {
		n++
		if n == want {
			close(done)
		}
	}
	rx, err := New(ro)
	if err != nil {
		b.Fatal(err)
	}
	if err := rx.Start(); err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	tx, err := New(to)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	tx.SetPeer(2, rx.Addr().String())
	payload := make([]byte, 100)
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tx.SendWait(context.Background(), 2, 1, payload); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
	s := tx.Stats()
	if p, ok := s.Peer(2); ok && p.BatchesSent > 0 {
		b.ReportMetric(float64(p.MessagesSent)/float64(p.BatchesSent), "msgs/batch")
	}
}
