package etcd_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
)

// The benchmarks measure lock+unlock pairs on the shared three-member
// cluster, each goroutine on a resource of its own, through the store
// alone and through a lock.SingleLocker. The side-by-side comparison with
// etcd's concurrency.Mutex is in bench/ (the etcd section).

func BenchmarkStore(b *testing.B) {
	s := newStore(b, clientOf(b, etcdtest.Shared(b).Endpoints()...))
	pairs(b, func(ctx context.Context, resource, token string) error {
		if _, err := s.AcquireFenced(ctx, resource, token, 10*time.Second); err != nil {
			return err
		}
		return s.Release(ctx, resource, token)
	})
}

func BenchmarkSingleLocker(b *testing.B) {
	l, err := lock.NewSingle(newStore(b, clientOf(b, etcdtest.Shared(b).Endpoints()...)), nil)
	if err != nil {
		b.Fatal(err)
	}
	pairs(b, func(ctx context.Context, resource, _ string) error {
		held, err := l.TryLock(ctx, resource, 10*time.Second)
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
