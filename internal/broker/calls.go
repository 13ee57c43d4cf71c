package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// calls pairs the answers of request/response messages on the inter-broker transport with
// the requests that wait for them, by correlation id. The transport delivers messages, not
// calls: an answer that comes after its caller gave up finds no waiter and is dropped,
// and a request whose answer is lost is the caller's to retry.
type calls[T any] struct {
	corr    atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]chan T
}

var errNoAnswer = errors.New("no answer in time")

// begin registers a call and returns its correlation id and the channel its answer
// arrives on; end must follow.
func (c *calls[T]) begin() (uint64, chan T) {
	corr := c.corr.Add(1)
	ch := make(chan T, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.pending = map[uint64]chan T{}
	}
	c.pending[corr] = ch
	c.mu.Unlock()
	return corr, ch
}

func (c *calls[T]) end(corr uint64) {
	c.mu.Lock()
	delete(c.pending, corr)
	c.mu.Unlock()
}

// answer hands an answer to its waiting call, if it still waits; it never blocks.
func (c *calls[T]) answer(corr uint64, v T) {
	c.mu.Lock()
	ch := c.pending[corr]
	delete(c.pending, corr)
	c.mu.Unlock()
	if ch != nil {
		ch <- v // buffered: one answer per call
	}
}

// call sends a request built with its correlation id and waits for the answer until ctx
// ends.
func (c *calls[T]) call(ctx context.Context, send func(corr uint64) error) (T, error) {
	corr, ch := c.begin()
	defer c.end(corr)
	var zero T
	if err := send(corr); err != nil {
		return zero, err
	}
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return zero, errNoAnswer
	}
}
