// Package tlstest makes throwaway certificate authorities and certificates for tests: PEM
// files in a folder, with the names and usages a broker's listeners and its inter-broker
// transport need. It is for tests only; nothing in a broker imports it.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// CA is a certificate authority whose certificate lives in CertFile.
type CA struct {
	Name     string
	CertFile string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	dir      string
}

var serial atomic.Int64

func nextSerial() *big.Int { return big.NewInt(time.Now().UnixNano() + serial.Add(1)) }

// NewCA makes a CA named name with its files in dir.
func NewCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"cairn tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Name: name, cert: cert, key: key, dir: dir, CertFile: filepath.Join(dir, name+"-ca.pem")}
	if err := writePEM(ca.CertFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return ca, nil
}

// Leaf is an issued certificate and key, in files.
type Leaf struct {
	CertFile, KeyFile, CAFile string
	Subject                   pkix.Name
}

// Issue makes a certificate for subject (its common name names the files) usable by a
// server and a client alike, valid for localhost and 127.0.0.1.
func (ca *CA) Issue(subject pkix.Name) (Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Leaf{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Leaf{}, err
	}
	base := fmt.Sprintf("%s-%s-%d", ca.Name, subject.CommonName, tmpl.SerialNumber.Int64())
	l := Leaf{CertFile: filepath.Join(ca.dir, base+".pem"), KeyFile: filepath.Join(ca.dir, base+"-key.pem"), CAFile: ca.CertFile, Subject: subject}
	if err := writePEM(l.CertFile, "CERTIFICATE", der); err != nil {
		return Leaf{}, err
	}
	if err := writePEM(l.KeyFile, "PRIVATE KEY", kder); err != nil {
		return Leaf{}, err
	}
	return l, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
