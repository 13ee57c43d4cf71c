package faults

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
)

// nodeTLS is a node's rpc mutual TLS with a certificate of ca.
func nodeTLS(t *testing.T, ca *tlstest.CA, name string) *rpc.TLSConfig {
	t.Helper()
	leaf, err := ca.Issue(pkix.Name{CommonName: name})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(leaf.CertFile, leaf.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(leaf.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(raw)
	return &rpc.TLSConfig{
		Server: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert},
		Client: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool},
	}
}

// TestProxyRelaysMutualTLS: with the cluster's rpc under mutual TLS the proxy still reads
// each hello (it ends the dialler's TLS and dials the broker under TLS), relays the real
// transport's traffic, and a cut still drops and refuses exactly that sender. A
// plaintext dialler, or one with another CA's certificate, is refused at the handshake.
func TestProxyRelaysMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	recv, err := rpc.New(rpc.Options{NodeID: 2, ClusterID: "c", ListenAddr: "127.0.0.1:0", TLS: nodeTLS(t, ca, "broker-2"),
		Handler: func(from int32, typ uint8, payload []byte) {
			if from == 1 {
				got.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	ptls, err := newProxyTLS(ca)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProxy(2, t.Logf, ptls)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	p.setTarget(recv.Addr().String())

	send, err := rpc.New(rpc.Options{NodeID: 1, ClusterID: "c", ListenAddr: "127.0.0.1:0", TLS: nodeTLS(t, ca, "broker-1"),
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, DropAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer send.Close()
	send.SetPeer(2, p.addr())
	if err := send.Send(2, 9, []byte("x")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "message through the TLS proxy", func() bool { return got.Load() == 1 })

	p.cut(1)
	if s := p.stats(); s.Dropped != 1 {
		t.Fatalf("cut dropped %d connections, want 1 (%+v)", s.Dropped, s)
	}
	// A write on a dropped TLS connection may still succeed into the socket's buffer, so
	// the sender learns of the drop (and redials) only from a later one.
	waitUntil(t, 15*time.Second, "redial refused", func() bool {
		send.Send(2, 9, []byte("y"))
		return p.stats().Refused >= 1
	})
	if got.Load() != 1 {
		t.Fatalf("%d messages arrived across the cut", got.Load()-1)
	}
	p.heal(1)
	send.Send(2, 9, []byte("z"))
	waitUntil(t, 5*time.Second, "traffic after heal", func() bool { return got.Load() >= 2 })

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := rpc.Probe(ctx, p.addr(), 3, "c"); err == nil {
		t.Fatal("a plaintext probe through the TLS proxy was answered")
	}
	other, err := tlstest.NewCA(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := rpc.New(rpc.Options{NodeID: 3, ClusterID: "c", ListenAddr: "127.0.0.1:0", TLS: nodeTLS(t, other, "broker-3")})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, err := stranger.Probe(ctx, p.addr()); err == nil {
		t.Fatal("a node with another CA's certificate was answered through the proxy")
	}
	// Under TLS 1.3 the client's handshake ends before the proxy has checked its
	// certificate, so the proxy may count the refusal just after the probe failed.
	waitUntil(t, 5*time.Second, "two refused handshakes", func() bool { return p.stats().TLSFailed >= 2 })
	if s := p.stats(); s.BadHello != 0 {
		t.Fatalf("bad hellos: %+v", s)
	}
}
