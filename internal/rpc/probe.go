package rpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// ProbeNodeID is the receiver id of a probe handshake: no node may have it.
const ProbeNodeID int32 = 0

// Probe asks the node listening on addr for its node id, presenting this transport's node id
// and cluster id. It exists so that a broker forming or joining a cluster can learn its
// seeds' ids from their addresses alone; nothing but the handshake travels, and the
// connection is closed at once.
func (t *Transport) Probe(ctx context.Context, addr string) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, t.opts.DialTimeout)
	defer cancel()
	var cfg *tls.Config
	if t.opts.TLS != nil {
		cfg = t.opts.TLS.Client
	}
	id, err := probe(ctx, addr, t.opts.NodeID, t.opts.ClusterID, cfg)
	var se *probeSecurityError
	if errors.As(err, &se) {
		// Callers retry a seed that does not answer and log that at debug level, since a
		// seed still starting is routine; a seed that refuses this node's security never
		// comes round, so the operator must see why this node does not join.
		t.tlsLog.warn(t.log, "rpc: a seed refused this node's probe; this node cannot join until its inter-broker security (rpc.tls.*) matches the cluster's",
			"addr", addr, "err", err)
	}
	return id, err
}

// probeSecurityError is a probe that failed on the transport's security rather than on
// reachability: a failed TLS handshake, or a listener that refused the hello.
type probeSecurityError struct{ err error }

func (e *probeSecurityError) Error() string { return e.err.Error() }
func (e *probeSecurityError) Unwrap() error { return e.err }

// Probe dials addr, sends a hello from node from to ProbeNodeID in cluster clusterID, and
// returns the node id the listener acks with. A listener of another cluster refuses; the
// error carries its reason. ctx bounds the whole exchange. It speaks plaintext; a
// transport's Probe uses the transport's TLS.
func Probe(ctx context.Context, addr string, from int32, clusterID string) (int32, error) {
	return probe(ctx, addr, from, clusterID, nil)
}

func probe(ctx context.Context, addr string, from int32, clusterID string, tlsCfg *tls.Config) (int32, error) {
	if len(clusterID) > maxClusterID {
		return 0, fmt.Errorf("rpc: cluster id longer than %d bytes", maxClusterID)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	c.SetDeadline(deadline)
	// Unblock the reads below when ctx ends before the deadline.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if tlsCfg != nil {
		if c, err = clientTLS(ctx, c, tlsCfg, addr); err != nil {
			return 0, &probeSecurityError{fmt.Errorf("probe %s: %w", addr, err)}
		}
	}
	if _, err := c.Write(appendHello(nil, hello{From: from, To: ProbeNodeID, Cluster: clusterID})); err != nil {
		return 0, fmt.Errorf("probe %s: %w", addr, err)
	}
	var hdr [frameHeaderLen]byte
	body, err := readFrame(bufio.NewReaderSize(c, 64), &hdr, maxHelloFrame)
	if err != nil {
		return 0, fmt.Errorf("probe %s: %w", addr, err)
	}
	a, err := decodeAck(body)
	if err != nil {
		return 0, fmt.Errorf("probe %s: %w", addr, err)
	}
	if !a.OK {
		return 0, &probeSecurityError{fmt.Errorf("probe %s: refused: %s", addr, a.Reason)}
	}
	if a.From == ProbeNodeID {
		return 0, fmt.Errorf("probe %s: the listener has the reserved node id %d", addr, ProbeNodeID)
	}
	return a.From, nil
}
