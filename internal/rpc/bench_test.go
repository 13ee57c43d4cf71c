package rpc

import (
	"context"
	"testing"
)

// BenchmarkSendLoopback measures 100-byte messages from one node to another over loopback,
// through SendWait, until the receiver has them all.
func BenchmarkSendLoopback(b *testing.B) {
	done := make(chan struct{})
	want := b.N
	n := 0
	o := testOptions(2, nil)
	o.Handler = func(int32, uint8, []byte) {
		n++
		if n == want {
			close(done)
		}
	}
	rx, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	if err := rx.Start(); err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	tx, err := New(testOptions(1, nil))
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	tx.SetPeer(2, rx.Addr().String())
	payload := make([]byte, 100)
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tx.SendWait(context.Background(), 2, 1, payload); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
	s := tx.Stats()
	if p, ok := s.Peer(2); ok && p.BatchesSent > 0 {
		b.ReportMetric(float64(p.MessagesSent)/float64(p.BatchesSent), "msgs/batch")
	}
}
