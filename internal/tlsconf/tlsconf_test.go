package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/tlsconf"
	"github.com/cairn-io/cairn/internal/tlsconf/tlstest"
)

// handshake runs one TLS handshake between a server and a client config over a pipe and
// returns the common name of the certificate the server presented.
func handshake(t *testing.T, server, client *tls.Config) (string, error) {
	t.Helper()
	// Loopback TCP rather than net.Pipe: a refusing side writes its alert without waiting
	// for the other to read it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// A side that refuses the other sends an alert and stops; closing its end then
	// unblocks the other side's read.
	srv := tls.Server(a, server)
	errc := make(chan error, 1)
	go func() {
		err := srv.Handshake()
		if err != nil {
			a.Close()
		}
		errc <- err
	}()
	cl := tls.Client(b, client)
	cerr := cl.Handshake()
	if cerr != nil {
		b.Close()
		<-errc
		return "", cerr
	}
	// TLS 1.3 lets the client finish before the server has checked its certificate: a
	// read sees the server's verdict.
	if err := <-errc; err != nil {
		return "", err
	}
	return cl.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func TestMutualTLSAcceptsTheClusterCAAndRefusesAnother(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA(dir, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlstest.NewCA(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	srvLeaf, _ := ca.Issue(pkix.Name{CommonName: "broker-1"})
	goodLeaf, _ := ca.Issue(pkix.Name{CommonName: "broker-2"})
	badLeaf, _ := other.Issue(pkix.Name{CommonName: "broker-2"})
	srv, err := tlsconf.New(tlsconf.Files{Cert: srvLeaf.CertFile, Key: srvLeaf.KeyFile, CA: ca.CertFile, ClientAuth: tlsconf.ClientAuthRequired})
	if err != nil {
		t.Fatal(err)
	}
	good, err := tlsconf.New(tlsconf.Files{Cert: goodLeaf.CertFile, Key: goodLeaf.KeyFile, CA: ca.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	if cn, err := handshake(t, srv.ServerConfig(), good.MutualClientConfig()); err != nil || cn != "broker-1" {
		t.Fatalf("same cluster: %q %v", cn, err)
	}
	// A client of another CA is refused by the server, and refuses the server itself.
	bad, err := tlsconf.New(tlsconf.Files{Cert: badLeaf.CertFile, Key: badLeaf.KeyFile, CA: other.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, srv.ServerConfig(), bad.MutualClientConfig()); err == nil {
		t.Fatal("a peer of another CA completed a handshake")
	}
	// No client certificate at all is refused when it is required.
	if _, err := handshake(t, srv.ServerConfig(), &tls.Config{InsecureSkipVerify: true}); err == nil {
		t.Fatal("a client without a certificate completed a handshake")
	}
}

func TestRotatedCertificateIsServedToNewHandshakes(t *testing.T) {
	dir := t.TempDir()
	ca, _ := tlstest.NewCA(dir, "cluster")
	first, _ := ca.Issue(pkix.Name{CommonName: "first"})
	second, _ := ca.Issue(pkix.Name{CommonName: "second"})
	r, err := tlsconf.New(tlsconf.Files{Cert: first.CertFile, Key: first.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	client := &tls.Config{InsecureSkipVerify: true}
	if cn, err := handshake(t, r.ServerConfig(), client); err != nil || cn != "first" {
		t.Fatalf("before rotation: %q %v", cn, err)
	}
	for _, p := range [][2]string{{second.CertFile, first.CertFile}, {second.KeyFile, first.KeyFile}} {
		b, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cn, err := handshake(t, r.ServerConfig(), client)
		if err != nil {
			t.Fatal(err)
		}
		if cn == "second" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serving %q after rotation", cn)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err, n := r.LastError(); err != nil || n != 1 {
		t.Fatalf("reload state: %v, %d reloads", err, n)
	}
}

func TestBadFilesAreRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	ca, _ := tlstest.NewCA(dir, "cluster")
	leaf, _ := ca.Issue(pkix.Name{CommonName: "x"})
	for name, f := range map[string]tlsconf.Files{
		"key for the cert":    {Cert: leaf.CertFile, Key: leaf.CertFile},
		"missing file":        {Cert: leaf.CertFile + ".nope", Key: leaf.KeyFile},
		"client auth, no CA":  {Cert: leaf.CertFile, Key: leaf.KeyFile, ClientAuth: tlsconf.ClientAuthRequired},
		"unknown client auth": {Cert: leaf.CertFile, Key: leaf.KeyFile, ClientAuth: "sometimes"},
		"CA not PEM":          {Cert: leaf.CertFile, Key: leaf.KeyFile, CA: leaf.KeyFile + "x"},
	} {
		if _, err := tlsconf.New(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
