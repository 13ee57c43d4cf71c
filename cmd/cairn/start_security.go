package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/cairn-io/cairn/internal/admin"
	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/tlsconf"
)

// The start flags of inter-broker TLS and of the admin API's security, kept apart from
// startFlags' list so the listener flags and these grow without touching each other.
func init() {
	startFlags = append(startFlags, []struct{ flag, property, usage string }{
		{"rpc-tls-enabled", config.NodeRPCTLSEnabled, "mutual TLS on every inter-broker connection (true or false)"},
		{"rpc-tls-certificate-location", config.NodeRPCTLSCertificate, "PEM certificate this broker presents to its peers"},
		{"rpc-tls-key-location", config.NodeRPCTLSKey, "PEM key of --rpc-tls-certificate-location"},
		{"rpc-tls-truststore-location", config.NodeRPCTLSTruststore, "PEM CA bundle a peer's certificate must chain to"},
		{"admin-auth", config.NodeAdminAuth, "admin API authentication: none or basic (SCRAM users)"},
		{"admin-auth-probes-open", config.NodeAdminAuthProbesOpen, "serve /v1/status/ready and /metrics without credentials (true or false, default true)"},
		{"admin-tls-certificate-location", config.NodeAdminTLSCertificate, "PEM certificate: the admin API serves HTTPS"},
		{"admin-tls-key-location", config.NodeAdminTLSKey, "PEM key of --admin-tls-certificate-location"},
		{"admin-tls-truststore-location", config.NodeAdminTLSTruststore, "PEM CA bundle that verifies admin API client certificates"},
		{"admin-tls-client-auth", config.NodeAdminTLSClientAuth, "admin API client certificates: none, requested or required"},
	}...)
}

// rpcTLS loads the inter-broker certificate, key and CA, to be reloaded when they change;
// nil when rpc.tls.enabled is off.
func rpcTLS(c config.RPCTLS) (*rpc.TLSConfig, error) {
	if !c.Enabled {
		return nil, nil
	}
	r, err := tlsconf.New(tlsconf.Files{Cert: c.Cert, Key: c.Key, CA: c.Truststore, ClientAuth: tlsconf.ClientAuthRequired})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.NodeRPCTLSEnabled, err)
	}
	return &rpc.TLSConfig{Server: r.ServerConfig(), Client: r.MutualClientConfig()}, nil
}

// securityNodeValues are the security node properties set to other than their defaults,
// which DescribeConfigs reports as set at start (the rest as defaults).
func securityNodeValues(n config.NodeConfig) map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{
		config.NodeRPCTLSEnabled:       strconv.FormatBool(n.RPCTLS.Enabled),
		config.NodeRPCTLSCertificate:   n.RPCTLS.Cert,
		config.NodeRPCTLSKey:           n.RPCTLS.Key,
		config.NodeRPCTLSTruststore:    n.RPCTLS.Truststore,
		config.NodeAdminAuth:           n.Admin.Auth,
		config.NodeAdminAuthProbesOpen: strconv.FormatBool(n.Admin.ProbesOpen),
		config.NodeAdminTLSCertificate: n.Admin.Cert,
		config.NodeAdminTLSKey:         n.Admin.Key,
		config.NodeAdminTLSTruststore:  n.Admin.Truststore,
		config.NodeAdminTLSClientAuth:  n.Admin.ClientAuth,
	} {
		if p, ok := config.Lookup(config.ScopeNode, k); ok && v != p.Default {
			out[k] = v
		}
	}
	return out
}

// secureAdmin puts the admin API behind its authentication and, when a certificate is
// configured, HTTPS; it returns the listener to serve and its scheme.
func secureAdmin(srv *admin.Server, b *broker.Broker, ln net.Listener, a config.AdminSecurity, lg *slog.Logger) (net.Listener, string, error) {
	srv.SetAuth(admin.AuthOptions{
		RequireAuthentication: a.Auth == config.AdminAuthBasic, ProbesOpen: a.ProbesOpen,
		Credentials: b, Authorizer: b, Logger: lg,
	})
	if !a.TLSEnabled() {
		return ln, "http", nil
	}
	r, err := tlsconf.New(tlsconf.Files{Cert: a.Cert, Key: a.Key, CA: a.Truststore, ClientAuth: a.ClientAuth})
	if err != nil {
		return nil, "", fmt.Errorf("admin API TLS: %w", err)
	}
	return tls.NewListener(ln, r.ServerConfig()), "https", nil
}
