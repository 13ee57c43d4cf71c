package kafka

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sized prefixes each body with its length, as frames travel on the wire.
func sized(bodies ...[]byte) []byte {
	var out []byte
	for _, b := range bodies {
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// FuzzSASLFrames feeds arbitrary bytes, as a stream of frames, into a connection of a SASL
// listener that has not authenticated, then a Metadata request. Nothing may panic, and the
// connection must end once the client goes away, whatever state the garbage left it in.
func FuzzSASLFrames(f *testing.F) {
	handshake := func(mech string, v int16) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Mechanism = mech
		return frame(r, v)
	}
	authenticate := func(msg string, v int16) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte(msg)
		return frame(r, v)
	}
	f.Add(sized(handshake("PLAIN", 1), authenticate("\x00alice\x00pw", 1)))
	f.Add(sized(handshake("PLAIN", 1), authenticate("garbage", 2)))
	f.Add(sized(handshake("SCRAM-SHA-256", 1), authenticate("n,,n=alice,r=abc", 1), authenticate("c=biws,r=abc,p=AAAA", 1)))
	f.Add(sized(handshake("SCRAM-SHA-512", 1), authenticate("c=biws,r=x,p=y", 0)))
	f.Add(sized(handshake("SCRAM-SHA-512", 0), []byte("n,,n=alice,r=abc"), []byte{}, []byte("c=")))
	f.Add(sized(handshake("PLAIN", 0), []byte{}))
	f.Add(sized(handshake("GSSAPI", 1)))
	f.Add(sized(frame(kmsg.NewPtrApiVersionsRequest(), 3), authenticate("x", 1)))
	f.Add(sized(handshake("PLAIN", 1), handshake("PLAIN", 1)))
	f.Add(binary.BigEndian.AppendUint32(nil, MaxPreAuthFrameBytes+1))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3})
	s := newTestServer(f)
	s.lg = slog.New(slog.NewTextHandler(io.Discard, nil)) // a warning per input would drown the fuzzer's output
	metadata := sized(frame(kmsg.NewPtrMetadataRequest(), 1))
	f.Fuzz(func(t *testing.T, stream []byte) {
		client, server := net.Pipe()
		served := make(chan struct{})
		go func() {
			defer close(served)
			s.serveConn(server, Listener{Name: "SASL_PLAINTEXT", SASL: true})
		}()
		read := make(chan struct{})
		go func() {
			defer close(read)
			io.Copy(io.Discard, client)
		}()
		client.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := client.Write(stream); err == nil {
			client.Write(metadata)
		}
		client.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("connection still served after the client closed")
		}
		<-read
	})
}
