package lab

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cairn-io/cairn/internal/console"
)

// Sessions runs the lab for the web console (`/console/lab` on a --simulate-power-loss
// broker): one run at a time, straight through (--auto), in a fresh scratch folder removed
// afterwards, printing into a bounded buffer the page shows as it grows. A run is bounded
// by maxRun and ends with the broker's context.
type Sessions struct {
	ctx    context.Context
	binary string

	mu      sync.Mutex
	running bool
	started time.Time
	result  string
	out     boundedBuffer
}

// maxRun bounds one run; a lab takes about a minute.
const maxRun = 10 * time.Minute

// maxOutput bounds what a run keeps of its output; a lab prints about 10 KiB.
const maxOutput = 256 << 10

// NewSessions runs the lab with binary (normally this one) until ctx ends.
func NewSessions(ctx context.Context, binary string) *Sessions {
	return &Sessions{ctx: ctx, binary: binary}
}

var errRunning = errors.New("a lab is already running; wait for it to finish")

// Start implements console.Lab.
func (s *Sessions) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return errRunning
	}
	dir, err := DefaultDir()
	if err != nil {
		return err
	}
	s.running, s.started, s.result = true, time.Now(), ""
	s.out = boundedBuffer{max: maxOutput}
	go func() {
		ctx, cancel := context.WithTimeout(s.ctx, maxRun)
		defer cancel()
		defer os.RemoveAll(dir)
		err := Run(ctx, Options{Binary: s.binary, Dir: dir, Auto: true, In: strings.NewReader(""), Out: lockedWriter{s}})
		s.mu.Lock()
		defer s.mu.Unlock()
		s.running, s.result = false, "passed"
		if err != nil {
			s.result = "Failed: " + err.Error()
		}
	}()
	return nil
}

// Status implements console.Lab.
func (s *Sessions) Status() console.LabStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := console.LabStatus{Running: s.running, Result: s.result, Output: s.out.String()}
	if !s.started.IsZero() {
		st.Started = s.started.UTC().Format(time.RFC3339)
	}
	return st
}

type lockedWriter struct{ s *Sessions }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.out.Write(p)
}

// boundedBuffer keeps the first max bytes written and counts the rest.
type boundedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p) // all of it is taken, kept or not: the lab must not fail on a long run
	room := b.max - b.buf.Len()
	if room < len(p) {
		b.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	b.buf.Write(p)
	return n, nil
}

func (b *boundedBuffer) String() string {
	if b.dropped > 0 {
		return b.buf.String() + "\n[output cut]"
	}
	return b.buf.String()
}
