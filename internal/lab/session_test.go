package lab

import (
	"strings"
	"testing"
	"time"
)

// A run whose brokers cannot start ends as failed, with why, and a new run may start; while
// one runs, a second is refused.
func TestSessionsOneRunAtATime(t *testing.T) {
	s := NewSessions(t.Context(), "/nonexistent/cairn")
	if st := s.Status(); st.Running || st.Started != "" {
		t.Fatalf("before any run: %+v", st)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil && s.Status().Running {
		t.Fatal("a second run started while the first ran")
	}
	waitDone(t, s)
	st := s.Status()
	if !strings.HasPrefix(st.Result, "Failed: ") || !strings.Contains(st.Output, "Starting three brokers") || st.Started == "" {
		t.Fatalf("after the failed run: %+v", st)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("a new run after the first ended: %v", err)
	}
	waitDone(t, s)
}

func waitDone(t *testing.T, s *Sessions) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.Status().Running {
		if time.Now().After(deadline) {
			t.Fatal("a run whose brokers cannot start did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBoundedBufferKeepsTheStart(t *testing.T) {
	b := boundedBuffer{max: 8}
	for _, p := range []string{"abcd", "efgh", "ijkl"} {
		if n, err := b.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("write %q: %d %v", p, n, err)
		}
	}
	if got := b.String(); got != "abcdefgh\n[output cut]" {
		t.Fatalf("got %q", got)
	}
}
