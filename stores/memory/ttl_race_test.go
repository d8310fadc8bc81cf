package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/stores/memory"
)

// TTL never reports more time left than the lock was taken for, however
// the call interleaves with the acquisitions of the resource: the store
// reads its clock once it holds the resource's shard, as the acquisitions
// do, so a call that waited for the shard does not count the lock's time
// from before it was taken.
func TestTTLNeverAboveTheTTLTaken(t *testing.T) {
	s := memory.New()
	ctx := context.Background()
	const ttl = time.Second
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Acquire(ctx, "r", "a", ttl); err == nil {
				_ = s.Release(ctx, "r", "a")
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 200_000; i++ {
		left, held, err := s.TTL(ctx, "r")
		if err != nil {
			t.Fatalf("TTL(r) = %v", err)
		}
		if held && left > ttl {
			t.Fatalf("TTL(r) = %v, held, while r is only ever taken for %v", left, ttl)
		}
	}
}
