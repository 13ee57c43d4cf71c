package rpc

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"time"
)

// inboundConn is the current connection from one sender.
type inboundConn struct {
	conn net.Conn
	done chan struct{} // closed when its reader has stopped delivering
}

func (t *Transport) acceptLoop(ln net.Listener) {
	defer t.wg.Done()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if t.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or similar: wait a little rather than spin.
			backoff = nextBackoff(backoff, 5*time.Millisecond, time.Second)
			t.log.Warn("rpc: accept failed", "err", err, "retry_in", backoff)
			tm := time.NewTimer(backoff)
			select {
			case <-tm.C:
			case <-t.ctx.Done():
				tm.Stop()
				return
			}
			continue
		}
		backoff = 0
		if !t.track(c) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go t.serve(c)
	}
}

// serve runs one inbound connection: the handshake, then batches until error or Close.
func (t *Transport) serve(raw net.Conn) {
	defer t.wg.Done()
	defer t.untrack(raw)
	remote := raw.RemoteAddr().String()
	c := raw
	if t.opts.TLS != nil {
		var ok bool
		if c, ok = t.acceptTLS(raw, remote); !ok {
			return
		}
	}
	br := bufio.NewReaderSize(c, 64<<10)
	var hdr [frameHeaderLen]byte

	c.SetReadDeadline(time.Now().Add(t.opts.HandshakeTimeout))
	if t.opts.TLS == nil {
		if b, err := br.Peek(2); err == nil && looksLikeTLS(b) {
			t.counters.rejected.Add(1)
			t.tlsLog.warn(t.log, "rpc: refusing inbound connection", "remote", remote, "reason", reasonNoTLS)
			// A TLS dialler takes this frame for a record that is not TLS and says the peer
			// answered in plaintext (describeTLSError); the reason is for a capture.
			c.SetWriteDeadline(time.Now().Add(t.opts.HandshakeTimeout))
			c.Write(appendAck(nil, ack{OK: false, From: t.opts.NodeID, Reason: reasonNoTLS}))
			return
		}
	}
	body, err := readFrame(br, &hdr, maxHelloFrame)
	var h hello
	if err == nil {
		h, err = decodeHello(body)
	}
	if err != nil {
		if !t.isClosed() {
			t.counters.rejected.Add(1)
			t.log.Warn("rpc: inbound handshake failed; closing", "remote", remote, "err", err)
		}
		return
	}
	refuse := ""
	switch {
	case h.Cluster != t.opts.ClusterID:
		refuse = "cluster id " + strconv.Quote(h.Cluster) + " is not this cluster's " + strconv.Quote(t.opts.ClusterID)
	case h.To == ProbeNodeID:
		// A probe only asks who listens here: answer and close, deliver nothing.
		t.counters.probes.Add(1)
		c.SetWriteDeadline(time.Now().Add(t.opts.HandshakeTimeout))
		c.Write(appendAck(nil, ack{OK: true, From: t.opts.NodeID}))
		return
	case h.To != t.opts.NodeID:
		refuse = "this is not the node the dialler meant"
	}
	c.SetWriteDeadline(time.Now().Add(t.opts.HandshakeTimeout))
	if refuse != "" {
		t.counters.rejected.Add(1)
		t.log.Error("rpc: refusing inbound connection", "remote", remote, "from", h.From,
			"to", h.To, "cluster", h.Cluster, "reason", refuse)
		c.Write(appendAck(nil, ack{OK: false, From: t.opts.NodeID, Reason: refuse}))
		return
	}
	if _, err := c.Write(appendAck(nil, ack{OK: true, From: t.opts.NodeID})); err != nil {
		return
	}
	c.SetDeadline(time.Time{})

	// One delivering connection per sender: a newer one replaces the older, and waits for the
	// older reader to stop so that the handler still sees the sender's messages in order.
	me := &inboundConn{conn: raw, done: make(chan struct{})}
	defer close(me.done)
	t.mu.Lock()
	prev := t.inbound[h.From]
	t.inbound[h.From] = me
	rc := t.received[h.From]
	if rc == nil {
		rc = &recvCounters{}
		t.received[h.From] = rc
	}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		if t.inbound[h.From] == me {
			delete(t.inbound, h.From)
		}
		t.mu.Unlock()
	}()
	if prev != nil {
		prev.conn.Close()
		<-prev.done
	}

	for {
		body, err := readFrame(br, &hdr, t.opts.MaxFrameBytes)
		var msgs []Message
		if err == nil {
			msgs, err = decodeBatch(body)
		}
		if err != nil {
			if errors.Is(err, ErrCorruptFrame) {
				t.counters.frameErrors.Add(1)
				t.log.Error("rpc: bad frame from peer; closing the connection", "from", h.From,
					"remote", remote, "err", err)
			} else if !t.isClosed() && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.log.Debug("rpc: inbound connection ended", "from", h.From, "err", err)
			}
			return
		}
		rc.batches.Add(1)
		rc.msgs.Add(uint64(len(msgs)))
		rc.bytes.Add(uint64(frameHeaderLen + len(body)))
		if t.opts.Handler == nil {
			continue
		}
		for _, m := range msgs {
			t.opts.Handler(h.From, m.Type, m.Payload)
		}
	}
}
