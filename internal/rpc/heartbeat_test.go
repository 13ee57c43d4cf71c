package rpc

import (
	"slices"
	"testing"
)

func TestHeartbeatRoundTrip(t *testing.T) {
	hbs := []Heartbeat{{1, 2, 3}, {^uint64(0), 0, 1 << 40}}
	p := EncodeHeartbeats(nil, hbs)
	got, err := DecodeHeartbeats(nil, p)
	if err != nil || !slices.Equal(got, hbs) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {1}, {2, 0, 0, 0, 0}, p[:len(p)-1], append(slices.Clone(p), 0)} {
		if _, err := DecodeHeartbeats(nil, bad); err == nil {
			t.Errorf("accepted %x", bad)
		}
	}
}

func TestHeartbeatCoalescerOneMessagePerPeer(t *testing.T) {
	c := NewHeartbeatCoalescer(0)
	for g := uint64(0); g < 100; g++ {
		c.Add(2, Heartbeat{Group: g, Term: 1, Commit: g})
		c.Add(3, Heartbeat{Group: g, Term: 1, Commit: g})
		c.Add(2, Heartbeat{Group: g, Term: 2, Commit: g + 1}) // later entry for the same group wins
	}
	var sent []int32
	err := c.Flush(func(to int32, payload []byte) error {
		sent = append(sent, to)
		hbs, err := DecodeHeartbeats(nil, payload)
		if err != nil || len(hbs) != 100 {
			t.Fatalf("to %d: %d entries, %v", to, len(hbs), err)
		}
		if to == 2 && hbs[5] != (Heartbeat{5, 2, 6}) {
			t.Fatalf("latest entry not kept: %v", hbs[5])
		}
		return nil
	})
	if err != nil || !slices.Equal(sent, []int32{2, 3}) {
		t.Fatalf("sent %v, %v", sent, err)
	}
	if c.Pending() != 0 {
		t.Fatal("entries survive a flush")
	}
	if err := c.Flush(func(int32, []byte) error { t.Fatal("empty tick sent"); return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestHeartbeatCoalescerSplitsPastBound(t *testing.T) {
	c := NewHeartbeatCoalescer(4)
	for g := uint64(0); g < 10; g++ {
		c.Add(1, Heartbeat{Group: g})
	}
	var sizes []int
	c.Flush(func(_ int32, p []byte) error {
		hbs, _ := DecodeHeartbeats(nil, p)
		sizes = append(sizes, len(hbs))
		return nil
	})
	if !slices.Equal(sizes, []int{4, 4, 2}) {
		t.Fatalf("sizes %v", sizes)
	}
}

func FuzzDecodeHeartbeats(f *testing.F) {
	f.Add(EncodeHeartbeats(nil, []Heartbeat{{1, 2, 3}}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		hbs, err := DecodeHeartbeats(nil, data)
		if err == nil && !slices.Equal(EncodeHeartbeats(nil, hbs), data) {
			t.Fatalf("accepted message does not re-encode to itself")
		}
	})
}
