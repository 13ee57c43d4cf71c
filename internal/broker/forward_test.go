package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/partition"
)

// Forwarded produces from one broker are appended in the order they were forwarded, even
// when an earlier one takes longer to append, while their acknowledgements are awaited
// concurrently. Appending them on a goroutine each (the old way) let a producer's later
// batch reach the sequence check first: OUT_OF_ORDER_SEQUENCE_NUMBER, and franz-go then
// renumbered and duplicated batches the leader had already stored.
func TestForwardedProducesAppendInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 20
	f := &forwarder{pending: map[uint64]chan partition.ProduceResult{}, sem: make(chan struct{}, maxForwardInflight),
		queues: map[int32]chan forwardRequest{}, ctx: ctx}

	var mu sync.Mutex
	var appended []int32
	releaseFirst := make(chan struct{})
	lastWaiting := make(chan struct{})
	f.start = func(req forwardRequest) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
		if req.partition == 0 {
			<-releaseFirst // the first append is slow
		}
		mu.Lock()
		appended = append(appended, req.partition)
		mu.Unlock()
		return partition.ProduceResult{BaseOffset: -1}, func(ctx context.Context) partition.ProduceResult {
			switch req.partition {
			case 0: // acknowledged only once the last one is being awaited too
				select {
				case <-lastWaiting:
				case <-ctx.Done():
					return produceFailed(nil, "timed out")
				}
			case n - 1:
				close(lastWaiting)
			}
			return partition.ProduceResult{BaseOffset: int64(req.partition)}
		}
	}
	replies := make(chan uint64, n)
	f.send = func(to int32, typ uint8, payload []byte) error {
		corr, res, err := decodeForwardResponse(payload)
		if err != nil || to != 2 || typ != msgForwardResponse || res.Err != nil || res.BaseOffset != int64(corr-1) {
			t.Errorf("reply to %d type %d: corr %d %+v %v", to, typ, corr, res, err)
		}
		replies <- corr
		return nil
	}

	for i := range n {
		f.handle(2, msgForwardRequest, mustEncodeForward(t, forwardRequest{corr: uint64(i + 1), acks: -1, timeoutMs: 10_000, partition: int32(i), topic: "t", records: []byte{1}}))
	}
	close(releaseFirst)
	deadline := time.After(10 * time.Second)
	for range n {
		select {
		case <-replies:
		case <-deadline:
			t.Fatal("not every forwarded produce was answered (were the waits run one after another?)")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, p := range appended {
		if p != int32(i) {
			t.Fatalf("appended in the order %v, want 0..%d", appended, n-1)
		}
	}
	// Every slot of the in-flight bound is given back.
	for range maxForwardInflight {
		select {
		case f.sem <- struct{}{}:
		case <-time.After(5 * time.Second):
			t.Fatal("an in-flight slot was not released")
		}
	}
}
