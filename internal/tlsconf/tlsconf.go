// Package tlsconf owns the TLS material a broker serves and dials with: it loads PEM
// certificate, key and CA files into crypto/tls configurations, and reloads them when the
// files change, so that an operator rotates certificates without a restart. Connections
// already open keep the certificate they were made with; new handshakes get the new one.
//
// It knows files and crypto/tls only. Who a certificate names (the principal) is
// internal/security's concern, and which listener uses which files is the caller's.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// ClientAuth values, Kafka's ssl.client.auth.
const (
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"
)

// Files names the PEM files of one TLS identity. CA may be empty for a server that does not
// verify client certificates.
type Files struct {
	Cert, Key, CA string
	// ClientAuth is none, requested or required (servers only; "" is none).
	ClientAuth string
}

// recheckEvery bounds how often a handshake looks at the files' modification times.
const recheckEvery = time.Second

// Reloader holds the current certificate and CA pool of Files and reloads them when a
// file's size or modification time changes. A reload that fails (a file half written, a
// key that does not match) keeps the previous material and is reported by LastError.
type Reloader struct {
	files Files

	mu      sync.Mutex
	cert    *tls.Certificate
	pool    *x509.CertPool
	stamps  [3]stamp
	checked time.Time
	lastErr error
	reloads int
}

type stamp struct {
	size int64
	mod  time.Time
}

// New loads f once and fails if it cannot.
func New(f Files) (*Reloader, error) {
	switch f.ClientAuth {
	case "", ClientAuthNone, ClientAuthRequested, ClientAuthRequired:
	default:
		return nil, fmt.Errorf("ssl.client.auth %q: want none, requested or required", f.ClientAuth)
	}
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("a TLS certificate file and key file are both required")
	}
	if f.ClientAuth != "" && f.ClientAuth != ClientAuthNone && f.CA == "" {
		return nil, fmt.Errorf("ssl.client.auth %s needs a CA file to verify client certificates", f.ClientAuth)
	}
	r := &Reloader{files: f}
	if err := r.load(); err != nil {
		return nil, err
	}
	r.checked = time.Now()
	return r, nil
}

func (r *Reloader) paths() [3]string { return [3]string{r.files.Cert, r.files.Key, r.files.CA} }

func (r *Reloader) currentStamps() ([3]stamp, error) {
	var out [3]stamp
	for i, p := range r.paths() {
		if p == "" {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return out, err
		}
		out[i] = stamp{st.Size(), st.ModTime()}
	}
	return out, nil
}

// load reads every file; r.mu is held or r is not yet shared.
func (r *Reloader) load() error {
	stamps, err := r.currentStamps()
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(r.files.Cert, r.files.Key)
	if err != nil {
		return fmt.Errorf("loading TLS certificate %s and key %s: %w", r.files.Cert, r.files.Key, err)
	}
	var pool *x509.CertPool
	if r.files.CA != "" {
		pem, err := os.ReadFile(r.files.CA)
		if err != nil {
			return fmt.Errorf("reading TLS CA file: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("TLS CA file %s holds no PEM certificate", r.files.CA)
		}
	}
	r.cert, r.pool, r.stamps = &cert, pool, stamps
	return nil
}

// current returns the material, reloading it first if a file changed since the last look.
func (r *Reloader) current() (*tls.Certificate, *x509.CertPool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= recheckEvery {
		r.checked = time.Now()
		if stamps, err := r.currentStamps(); err != nil {
			r.lastErr = err
		} else if stamps != r.stamps {
			if err := r.load(); err != nil {
				r.lastErr = err
			} else {
				r.lastErr = nil
				r.reloads++
			}
		}
	}
	return r.cert, r.pool
}

// LastError is why the last reload failed (nil after a good one), and Reloads how many
// reloads succeeded.
func (r *Reloader) LastError() (err error, reloads int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr, r.reloads
}

// Leaf returns the certificate being served now.
func (r *Reloader) Leaf() (*x509.Certificate, error) {
	cert, _ := r.current()
	if cert.Leaf != nil {
		return cert.Leaf, nil
	}
	return x509.ParseCertificate(cert.Certificate[0])
}

// ServerConfig is a TLS 1.2+ server configuration that picks up reloaded files at each
// handshake and verifies client certificates against the CA as ClientAuth says.
func (r *Reloader) ServerConfig() *tls.Config {
	auth := tls.NoClientCert
	switch r.files.ClientAuth {
	case ClientAuthRequested:
		auth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		auth = tls.RequireAndVerifyClientCert
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool := r.current()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*cert},
				ClientAuth:   auth,
				ClientCAs:    pool,
			}, nil
		},
	}
}

// MutualClientConfig is a TLS 1.2+ client configuration for a peer of the same cluster: it
// presents the current certificate and accepts a server only if its certificate chains to
// the CA. Host names are not checked, since brokers are often dialled by IP address; the
// CA is what names the cluster.
func (r *Reloader) MutualClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is verified below against the CA as it is at this handshake.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := r.current()
			return cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, pool := r.current()
			return VerifyChain(cs.PeerCertificates, pool, x509.ExtKeyUsageServerAuth)
		},
	}
}

// VerifyChain checks that certs (leaf first) chain to a root of pool, for usage.
func VerifyChain(certs []*x509.Certificate, pool *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("the peer presented no certificate")
	}
	if pool == nil {
		return errors.New("no CA to verify the peer's certificate against")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}
