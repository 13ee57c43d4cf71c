package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// TLSConfig puts every connection of a transport, accepted and dialled, probes included,
// under mutual TLS. The TLS handshake completes before the hello is read, so a node without
// a certificate the cluster's CA signed never reaches the cluster id check, let alone the
// Handler.
type TLSConfig struct {
	// Server is for accepted connections. It must require and verify a client certificate
	// (tls.RequireAndVerifyClientCert, set directly or by GetConfigForClient): the transport
	// trusts whoever completes the handshake as a member of the cluster.
	Server *tls.Config
	// Client is for dialled connections: it presents this node's certificate and verifies the
	// peer's chain. With neither ServerName nor InsecureSkipVerify, the dialled host is the
	// expected name.
	Client *tls.Config
}

func (c *TLSConfig) check() error {
	if c.Server == nil || c.Client == nil {
		return errors.New("rpc: TLS needs both a server and a client configuration")
	}
	if c.Server.GetConfigForClient == nil && c.Server.ClientAuth != tls.RequireAndVerifyClientCert {
		return errors.New("rpc: the TLS server configuration must require and verify client certificates")
	}
	return nil
}

// Reasons given to a peer whose transport security differs from ours. They name the
// property, since the fix is always on one node's configuration.
const (
	reasonWantTLS  = "this node requires TLS on the inter-broker transport (rpc.tls.enabled) and the dialler connected in plaintext"
	reasonNoTLS    = "this node has TLS off on the inter-broker transport (rpc.tls.enabled) and the dialler sent a TLS hello"
	errPlainAnswer = "the peer answered in plaintext, not TLS: this node has rpc.tls.enabled and the peer does not"
)

// secureConn is a TLS connection whose Close closes the socket at once. tls.Conn.Close
// first writes a close_notify alert, which can block for seconds on a peer that stopped
// reading; nothing on these connections relies on the alert.
type secureConn struct {
	*tls.Conn
	raw net.Conn
}

func (c *secureConn) Close() error { return c.raw.Close() }

// rawConn is the socket under c, the key of Transport.conns.
func rawConn(c net.Conn) net.Conn {
	if s, ok := c.(*secureConn); ok {
		return s.raw
	}
	return c
}

// clientTLS runs the client side of the TLS handshake on c, bounded by ctx.
func clientTLS(ctx context.Context, c net.Conn, cfg *tls.Config, addr string) (net.Conn, error) {
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, describeTLSError(err)
	}
	return &secureConn{Conn: tc, raw: c}, nil
}

// describeTLSError says what a handshake failure most likely means for an operator.
func describeTLSError(err error) error {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return fmt.Errorf("TLS handshake: %s (%w)", errPlainAnswer, err)
	}
	return fmt.Errorf("TLS handshake: %w", err)
}

// acceptTLS runs the server side of the TLS handshake on an accepted connection, within
// HandshakeTimeout, so a peer that connects and sends nothing holds its goroutine no longer.
// A dialler that sent a plaintext hello is told, in plaintext, why it is refused.
func (t *Transport) acceptTLS(c net.Conn, remote string) (net.Conn, bool) {
	c.SetDeadline(time.Now().Add(t.opts.HandshakeTimeout))
	tc := tls.Server(c, t.opts.TLS.Server)
	err := tc.HandshakeContext(t.ctx)
	if err == nil {
		// The client's certificate arrives after the server's Finished in TLS 1.3, and the
		// handshake above has verified it; anything read from here on is from a cluster member.
		return &secureConn{Conn: tc, raw: c}, true
	}
	if t.isClosed() {
		return nil, false
	}
	t.counters.tlsFailures.Add(1)
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && rh.Conn != nil && rh.RecordHeader[0] == 0 {
		// A frame length starts with a zero byte, a TLS record never does: this is an rpc
		// hello sent in plaintext.
		rh.Conn.Write(appendAck(nil, ack{OK: false, From: t.opts.NodeID, Reason: reasonWantTLS}))
		err = errors.New(reasonWantTLS)
	}
	t.tlsLog.warn(t.log, "rpc: inbound TLS handshake failed; closing, nothing from this peer is delivered",
		"remote", remote, "err", err)
	return nil, false
}

// looksLikeTLS reports whether the first bytes of a connection are a TLS handshake record
// (content type 22, major version 3) rather than a frame, whose length starts with zero.
func looksLikeTLS(b []byte) bool { return len(b) >= 2 && b[0] == 0x16 && b[1] == 0x03 }

// logLimiter bounds how often one kind of event is logged: a node probed by a stranger, or a
// peer redialling with a bad certificate, must not flood the log. Every event is counted in
// the stats regardless.
type logLimiter struct {
	every time.Duration

	mu         sync.Mutex
	next       time.Time
	suppressed int
}

func (l *logLimiter) warn(lg *slog.Logger, msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	if now.Before(l.next) {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.next = now.Add(l.every)
	n := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed_since_last", n)
	}
	lg.Warn(msg, args...)
}
