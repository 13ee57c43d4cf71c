package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-io/cairn/internal/config"
)

func TestStartListenersFromFlagsEnvAndYAML(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cairn.yaml")
	os.WriteFile(file, []byte("listeners: PLAINTEXT://:9092,SSL://:9094\nssl-certificate-location: /tls/c.pem\nssl-key-location: /tls/k.pem\n"), 0o644)
	t.Setenv("CAIRN_ADVERTISED_LISTENERS", "SSL://b1.example:9094")
	cmd := newStartCmd()
	if err := cmd.ParseFlags([]string{"--config", file, "--ssl-client-auth", "none"}); err != nil {
		t.Fatal(err)
	}
	values, err := startValues(cmd.Flags(), file)
	if err != nil {
		t.Fatal(err)
	}
	node, err := config.ResolveNode(values)
	if err != nil {
		t.Fatal(err)
	}
	if len(node.Listeners) != 2 || node.Listeners[1].Advertised != "b1.example:9094" || node.TLS.CertFile != "/tls/c.pem" {
		t.Fatalf("listeners %+v, tls %+v", node.Listeners, node.TLS)
	}
}

func TestStartRefusesJavaKeystores(t *testing.T) {
	cmd := newStartCmd()
	if err := cmd.ParseFlags([]string{"--ssl-keystore-location", "/tls/broker.jks"}); err != nil {
		t.Fatal(err)
	}
	if _, err := startValues(cmd.Flags(), ""); err == nil || !strings.Contains(err.Error(), "PEM files") {
		t.Fatalf("flag: got %v, want a refusal that says PEM", err)
	}
	file := filepath.Join(t.TempDir(), "cairn.yaml")
	os.WriteFile(file, []byte("ssl-truststore-type: JKS\n"), 0o644)
	if _, err := startValues(newStartCmd().Flags(), file); err == nil || !strings.Contains(err.Error(), "ssl.truststore.type") || !strings.Contains(err.Error(), "PEM") {
		t.Fatalf("YAML: got %v", err)
	}
}

func TestStartTLSListenerWithUnreadableCertificateFails(t *testing.T) {
	node, err := config.ResolveNode(map[string]string{config.NodeListeners: "SSL://:9094",
		config.NodeSSLCertificateLocation: "/nonexistent/c.pem", config.NodeSSLKeyLocation: "/nonexistent/k.pem"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kafkaListeners(node); err == nil || !strings.Contains(err.Error(), "listener SSL") {
		t.Fatalf("got %v", err)
	}
}
