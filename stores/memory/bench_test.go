package memory_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// The benchmarks measure lock+unlock pairs, each goroutine on a resource
// of its own, through the store alone and through a lock.SingleLocker
// (which adds a random token, validity accounting and the bookkeeping of
// held locks). Run them with -cpu 1,2,4 to see how they scale.

func BenchmarkStore(b *testing.B) {
	s := memory.New()
	pairs(b, func(ctx context.Context, resource, token string) error {
		if err := s.Acquire(ctx, resource, token, time.Minute); err != nil {
			return err
		}
		return s.Release(ctx, resource, token)
	})
}

func BenchmarkStoreFenced(b *testing.B) {
	s := memory.New()
	pairs(b, func(ctx context.Context, resource, token string) error {
		if _, err := s.AcquireFenced(ctx, resource, token, time.Minute); err != nil {
			return err
		}
		return s.Release(ctx, resource, token)
	})
}

func BenchmarkSingleLocker(b *testing.B) { lockerPairs(b, nil) }

func lockerPairs(b *testing.B, opts *lock.Options) {
	l, err := lock.NewSingle(memory.New(), opts)
	if err != nil {
		b.Fatal(err)
	}
	pairs(b, func(ctx context.Context, resource, _ string) error {
		held, err := l.TryLock(ctx, resource, time.Minute)
		if err != nil {
			return err
		}
		return l.Unlock(ctx, held)
	})
}

func pairs(b *testing.B, pair func(ctx context.Context, resource, token string) error) {
	ctx := context.Background()
	var ids atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := strconv.FormatInt(ids.Add(1), 10)
		resource, token := "bench/"+id, "token-"+id
		for pb.Next() {
			if err := pair(ctx, resource, token); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkFloor is the floor under the others: a mutex and a map, with
// an insertion and a deletion per pair, as a lock store needs at the
// least.
func BenchmarkFloor(b *testing.B) {
	var mu sync.Mutex
	m := make(map[string]string)
	pairs(b, func(_ context.Context, resource, token string) error {
		mu.Lock()
		m[resource] = token
		mu.Unlock()
		mu.Lock()
		delete(m, resource)
		mu.Unlock()
		return nil
	})
}

type noopHook struct{}

func (noopHook) Observe(context.Context, lock.Event) {}

// BenchmarkSingleLockerHook is BenchmarkSingleLocker with a hook that
// does nothing: what observing costs.
func BenchmarkSingleLockerHook(b *testing.B) { lockerPairs(b, &lock.Options{Hook: noopHook{}}) }
