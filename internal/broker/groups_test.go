package broker

import (
	"fmt"
	"sync"
	"testing"

	"github.com/cairn-io/cairn/internal/storage"
)

// TestConcurrentFindCoordinatorCreatesOffsetsOnce: the first FindCoordinators of a new
// cluster race to create __consumer_offsets; every one of them names a coordinator.
func TestConcurrentFindCoordinatorCreatesOffsetsOnce(t *testing.T) {
	b := open(t, storage.NewMemFS())
	defer b.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if bi, err := b.GroupCoordinator(fmt.Sprintf("g%d", i)); err != nil || bi.NodeID != 1 {
				errs <- fmt.Errorf("group g%d: coordinator %+v, %v", i, bi, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
