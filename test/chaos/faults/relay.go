package faults

import (
	"errors"
	"io"
	"time"
)

// The delayed relay stands in for the propagation delay of a link between two failure
// domains (racks), so that the cost of waiting for a far rack shows on one machine. Each
// chunk read from the sender is stamped with its due time (read time + the link's delay,
// looked up per chunk so that a change applies at run time) and written in FIFO order once
// due. The queue is bounded: when it is full the reader stops reading, so the sender's TCP
// window fills as it would on a slow link, and the memory held per connection stays below
// relayQueueChunks × relayChunkBytes.
const (
	relayChunkBytes  = 32 << 10
	relayQueueChunks = 256
)

type dueChunk struct {
	due time.Time
	buf []byte // a relayChunkBytes buffer from the free list
	n   int
}

// relayDelayed copies in to out, each chunk delay() after it was read, until in ends
// (everything queued is still written) or out fails. It returns the first error other
// than in's EOF.
func relayDelayed(out io.Writer, in io.Reader, delay func() time.Duration) error {
	queue := make(chan dueChunk, relayQueueChunks)
	// The writer hands buffers back; reader and writer each hold at most one more, so
	// no more than relayQueueChunks+2 buffers ever exist.
	free := make(chan []byte, relayQueueChunks+2)
	writerDone := make(chan struct{})
	readFailed := make(chan struct{}) // the connection was closed (a cut): drop what is queued
	var writeErr error
	go func() {
		defer close(writerDone)
		for c := range queue {
			if writeErr == nil {
				writeErr = sleepUntilDue(c.due, readFailed)
			}
			if writeErr == nil {
				_, writeErr = out.Write(c.buf[:c.n])
			}
			free <- c.buf // a failed writer keeps draining so that the reader never blocks on it
		}
	}()
	var readErr error
	for {
		var buf []byte
		select {
		case buf = <-free:
		default:
			buf = make([]byte, relayChunkBytes)
		}
		n, err := in.Read(buf)
		if n > 0 {
			queue <- dueChunk{due: time.Now().Add(delay()), buf: buf, n: n}
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
				close(readFailed)
			}
			break
		}
	}
	close(queue)
	<-writerDone
	if writeErr != nil {
		return writeErr
	}
	return readErr
}

var errRelayClosed = errors.New("relay closed while a chunk waited for its due time")

// sleepUntilDue returns at due, or with errRelayClosed once stop is closed. Only the last
// millisecond is slept precisely, and that uninterruptibly; the rest is a timer that stop
// can cut short.
func sleepUntilDue(due time.Time, stop <-chan struct{}) error {
	if wait := time.Until(due) - time.Millisecond; wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return errRelayClosed
		}
	}
	if wait := time.Until(due); wait > 0 {
		sleepPrecisely(wait)
	}
	return nil
}
