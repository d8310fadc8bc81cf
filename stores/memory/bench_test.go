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

// BenchmarkHookEvents is the floor under what BenchmarkSingleLockerHook
// adds to BenchmarkSingleLocker: the five events that a TryLock+Unlock
// pair emits (attempt, the acquire store call, acquired, the release
// store call, released), with the fields the locker sets, passed to the
// same no-op hook and nothing else. Each is an interface call with a
// 216-byte lock.Event argument, built and copied by value.
func BenchmarkHookEvents(b *testing.B) {
	var h lock.Hook = noopHook{}
	held := lock.Lock{Resource: "bench/1", Token: "token-1", ValidUntil: time.Now().Add(time.Minute), Fence: 1}
	pairs(b, func(ctx context.Context, resource, _ string) error {
		pairEvents(ctx, h, resource, held, time.Microsecond)
		return nil
	})
}

// pairEvents emits the events of a TryLock+Unlock pair. It is not
// inlined, as the locker's emissions are not.
//
//go:noinline
func pairEvents(ctx context.Context, h lock.Hook, resource string, l lock.Lock, took time.Duration) {
	h.Observe(ctx, lock.Event{Kind: lock.EventAttempt, Op: "trylock", Resource: resource, Attempt: 1})
	h.Observe(ctx, lock.Event{Kind: lock.EventStoreCall, Op: "trylock", Resource: resource, Store: "memory", StoreOp: "acquire", Duration: took})
	h.Observe(ctx, lock.Event{Kind: lock.EventAcquired, Op: "trylock", Resource: resource, Lock: l, Attempt: 1, Duration: took})
	h.Observe(ctx, lock.Event{Kind: lock.EventStoreCall, Op: "unlock", Resource: resource, Store: "memory", StoreOp: "release", Duration: took})
	h.Observe(ctx, lock.Event{Kind: lock.EventReleased, Op: "unlock", Resource: resource, Lock: l, Duration: took})
}

// BenchmarkHookCalls is the part of BenchmarkHookEvents that is the calls
// alone: five calls of the no-op hook with a zero lock.Event, which the
// compiler builds in place in the call's arguments.
func BenchmarkHookCalls(b *testing.B) {
	var h lock.Hook = noopHook{}
	pairs(b, func(ctx context.Context, _, _ string) error {
		pairCalls(ctx, h)
		return nil
	})
}

//go:noinline
func pairCalls(ctx context.Context, h lock.Hook) {
	for range 5 {
		h.Observe(ctx, lock.Event{})
	}
}

// BenchmarkSingleLockerFresh is BenchmarkSingleLocker with a new name for
// every lock, as a service that locks per request or per job does: the
// store makes an entry for each name, which the pairs on one name reuse.
func BenchmarkSingleLockerFresh(b *testing.B) {
	l, err := lock.NewSingle(memory.New(), nil)
	if err != nil {
		b.Fatal(err)
	}
	freshPairs(b, func(ctx context.Context, resource string) error {
		held, err := l.TryLock(ctx, resource, time.Minute)
		if err != nil {
			return err
		}
		return l.Unlock(ctx, held)
	})
}

// BenchmarkStoreFresh is BenchmarkStore with a new name for every lock.
func BenchmarkStoreFresh(b *testing.B) {
	s := memory.New()
	freshPairs(b, func(ctx context.Context, resource string) error {
		if err := s.Acquire(ctx, resource, "token", time.Minute); err != nil {
			return err
		}
		return s.Release(ctx, resource, "token")
	})
}

// freshPairs runs pair on a new name each time: the goroutine's own
// prefix and a counter (one allocation, the name's).
func freshPairs(b *testing.B, pair func(ctx context.Context, resource string) error) {
	ctx := context.Background()
	var ids atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := strconv.AppendInt([]byte("bench/"), ids.Add(1), 10)
		buf = append(buf, '/')
		base := len(buf)
		for n := int64(0); pb.Next(); n++ {
			if err := pair(ctx, string(strconv.AppendInt(buf[:base], n, 10))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
