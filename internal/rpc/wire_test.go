package rpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestBatchRoundTrip(t *testing.T) {
	msgs := []Message{{Type: 1, Payload: []byte("a")}, {Type: 2, Payload: nil}, {Type: 255, Payload: bytes.Repeat([]byte{7}, 1000)}}
	frame := appendBatch(nil, msgs)
	got, err := DecodeBatchFrame(frame, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("got %d messages, want %d", len(got), len(msgs))
	}
	for i := range msgs {
		if got[i].Type != msgs[i].Type || !bytes.Equal(got[i].Payload, msgs[i].Payload) {
			t.Fatalf("message %d: got %v, want %v", i, got[i], msgs[i])
		}
	}
	// Reading the same frame from a stream gives the same body.
	var hdr [frameHeaderLen]byte
	body, err := readFrame(bytes.NewReader(frame), &hdr, 1<<20)
	if err != nil || !bytes.Equal(body, frame[frameHeaderLen:]) {
		t.Fatalf("readFrame: %v", err)
	}
}

func TestBatchRejects(t *testing.T) {
	good := appendBatch(nil, []Message{{Type: 1, Payload: []byte("hello")}})
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	refix := func(b []byte) []byte { finishFrame(b, 0); return b }
	cases := map[string][]byte{
		"bad crc":       mut(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }),
		"over limit":    mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b, 1<<30); return b }),
		"short":         good[:5],
		"bad version":   mut(func(b []byte) []byte { b[8] = 9; return refix(b) }),
		"wrong kind":    mut(func(b []byte) []byte { b[9] = kindHello; return refix(b) }),
		"count too big": mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[10:], 1000); return refix(b) }),
		"trailing":      refix(append(bytes.Clone(good), 0)),
		"payload truncated": mut(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[15:], 6)
			return refix(b)
		}),
	}
	for name, frame := range cases {
		if _, err := DecodeBatchFrame(frame, 1<<20); !errors.Is(err, ErrCorruptFrame) {
			t.Errorf("%s: got %v, want ErrCorruptFrame", name, err)
		}
	}
}

func TestHelloAckRoundTrip(t *testing.T) {
	var hdr [frameHeaderLen]byte
	f := appendHello(nil, hello{From: 3, To: -7, Cluster: "prod-eu"})
	body, err := readFrame(bytes.NewReader(f), &hdr, maxHelloFrame)
	if err != nil {
		t.Fatal(err)
	}
	h, err := decodeHello(body)
	if err != nil || h != (hello{From: 3, To: -7, Cluster: "prod-eu"}) {
		t.Fatalf("hello: %+v %v", h, err)
	}
	f = appendAck(nil, ack{OK: false, From: 9, Reason: "nope"})
	body, err = readFrame(bytes.NewReader(f), &hdr, maxHelloFrame)
	if err != nil {
		t.Fatal(err)
	}
	a, err := decodeAck(body)
	if err != nil || a != (ack{OK: false, From: 9, Reason: "nope"}) {
		t.Fatalf("ack: %+v %v", a, err)
	}
	if _, err := decodeHello(body); err == nil {
		t.Fatal("an ack decoded as a hello")
	}
}

// FuzzDecodeBatch feeds arbitrary bytes to the batch decoder, both as one frame and as a stream:
// it must never panic, and whatever it accepts must re-encode to the same frame.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(appendBatch(nil, []Message{{Type: 1, Payload: []byte("x")}, {Type: 2}}))
	f.Add(appendBatch(nil, nil))
	f.Add(appendHello(nil, hello{From: 1, To: 2, Cluster: "c"}))
	f.Add([]byte{0, 0, 0, 6, 0, 0, 0, 0, 1, 3, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 16
		msgs, err := DecodeBatchFrame(data, limit)
		if err == nil {
			if re := appendBatch(nil, msgs); !bytes.Equal(re, data) {
				t.Fatalf("accepted frame does not re-encode to itself:\n%x\n%x", data, re)
			}
		}
		var hdr [frameHeaderLen]byte
		r := bytes.NewReader(data)
		for {
			body, err := readFrame(r, &hdr, limit)
			if err != nil {
				return
			}
			switch body[1] {
			case kindBatch:
				decodeBatch(body)
			case kindHello:
				decodeHello(body)
			case kindAck:
				decodeAck(body)
			}
		}
	})
}
