package redissuite

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// BenchGoroutines is how many goroutines the stores' benchmarks run.
const BenchGoroutines = 64

// Pairs runs pair in BenchGoroutines goroutines and reports pairs/s: the
// stores' benchmarks of lock+unlock pairs, uncontended (this measures the
// store's cost, not waiting), against a local redis-server. Each pair
// locks a fresh resource name, as services that lock per request or job
// do; with LOCKKIT_BENCH_REUSE=1 each goroutine locks one name again and
// again.
func Pairs(b *testing.B, pair func(ctx context.Context, resource, token string) error) {
	b.Helper()
	ctx := context.Background()
	b.SetParallelism(max(1, BenchGoroutines/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	var ids, seq atomic.Int64
	reuse := os.Getenv("LOCKKIT_BENCH_REUSE") == "1"
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := ids.Add(1)
		resource := fmt.Sprintf("bench-%d", id)
		token := fmt.Sprintf("token-%d", id)
		for pb.Next() {
			if !reuse {
				resource = "bench-" + strconv.FormatInt(seq.Add(1), 10)
			}
			if err := pair(ctx, resource, token); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// Benchmarks runs the stores' benchmarks on s, each a sub-benchmark:
// Acquire+Release and AcquireFenced+Release on the store, TryLock+Unlock
// through lock.NewSingle fenced and with Options.NoFence, and Contended:
// Lock+Unlock by 16 goroutines on one resource, with the default retry
// policy (how fast the lock is handed over when waiters are woken by
// releases).
func Benchmarks(b *testing.B, s Store) {
	b.Run("AcquireRelease", func(b *testing.B) {
		Pairs(b, func(ctx context.Context, resource, token string) error {
			if err := s.Acquire(ctx, resource, token, 10*time.Second); err != nil {
				return err
			}
			return s.Release(ctx, resource, token)
		})
	})
	b.Run("AcquireFencedRelease", func(b *testing.B) {
		Pairs(b, func(ctx context.Context, resource, token string) error {
			if _, err := s.AcquireFenced(ctx, resource, token, 10*time.Second); err != nil {
				return err
			}
			return s.Release(ctx, resource, token)
		})
	})
	for _, noFence := range []bool{false, true} {
		name := "SingleLocker/fenced"
		if noFence {
			name = "SingleLocker/no-fence"
		}
		b.Run(name, func(b *testing.B) {
			l, err := lock.NewSingle(s, &lock.Options{NoFence: noFence})
			if err != nil {
				b.Fatal(err)
			}
			Pairs(b, func(ctx context.Context, resource, _ string) error {
				held, err := l.TryLock(ctx, resource, 10*time.Second)
				if err != nil {
					return err
				}
				return l.Unlock(ctx, held)
			})
		})
	}
	b.Run("Contended", func(b *testing.B) {
		l, err := lock.NewSingle(s, nil)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				held, err := l.Lock(ctx, "contended", 10*time.Second)
				if err != nil {
					b.Error(err)
					return
				}
				if err := l.Unlock(ctx, held); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acquisitions/s")
	})
}
