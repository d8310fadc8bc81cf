package redis_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// The benchmarks measure lock+unlock pairs per second with 64 goroutines,
// each on its own resource (uncontended: this measures the store's cost,
// not waiting), against a local redis-server.

const benchGoroutines = 64

// parallel runs pair in benchGoroutines goroutines, each with its own
// resource name, and reports pairs/s.
func parallel(b *testing.B, pair func(ctx context.Context, resource, token string) error) {
	b.Helper()
	ctx := context.Background()
	b.SetParallelism(max(1, benchGoroutines/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	var ids atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := ids.Add(1)
		resource := fmt.Sprintf("bench-%d", id)
		token := fmt.Sprintf("token-%d", id)
		for pb.Next() {
			if err := pair(ctx, resource, token); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

func benchStore(b *testing.B) (*redis.Store, rueidis.Client) {
	b.Helper()
	client := redistest.Start(b).NewClient(b)
	s, err := redis.New(client, redis.WithPrefix("bench:"))
	if err != nil {
		b.Fatal(err)
	}
	return s, client
}

// BenchmarkFloor is the hand-written floor: SET NX PX and a
// compare-and-delete script by EVALSHA, straight on rueidis.
func BenchmarkFloor(b *testing.B) {
	_, client := benchStore(b)
	del := rueidis.NewLuaScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	parallel(b, func(ctx context.Context, resource, token string) error {
		key := "floor:{" + resource + "}"
		if err := client.Do(ctx, client.B().Set().Key(key).Value(token).Nx().PxMilliseconds(10000).Build()).Error(); err != nil {
			return err
		}
		n, err := del.Exec(ctx, client, []string{key}, []string{token}).AsInt64()
		if err == nil && n != 1 {
			err = fmt.Errorf("not released")
		}
		return err
	})
}

func BenchmarkAcquireRelease(b *testing.B) {
	s, _ := benchStore(b)
	parallel(b, func(ctx context.Context, resource, token string) error {
		if err := s.Acquire(ctx, resource, token, 10*time.Second); err != nil {
			return err
		}
		return s.Release(ctx, resource, token)
	})
}

func BenchmarkAcquireFencedRelease(b *testing.B) {
	s, _ := benchStore(b)
	parallel(b, func(ctx context.Context, resource, token string) error {
		if _, err := s.AcquireFenced(ctx, resource, token, 10*time.Second); err != nil {
			return err
		}
		return s.Release(ctx, resource, token)
	})
}

// BenchmarkSingleLocker is TryLock+Unlock through lock.SingleLocker, which
// acquires fenced, with random tokens.
func BenchmarkSingleLocker(b *testing.B) {
	s, _ := benchStore(b)
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	parallel(b, func(ctx context.Context, resource, _ string) error {
		held, err := l.TryLock(ctx, resource, 10*time.Second)
		if err != nil {
			return err
		}
		return l.Unlock(ctx, held)
	})
}

// BenchmarkContended is Lock+Unlock by 16 goroutines on one resource,
// through lock.SingleLocker with its default retry policy: how fast the
// lock is handed over when waiters are woken by releases.
func BenchmarkContended(b *testing.B) {
	s, _ := benchStore(b)
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
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handovers/s")
}
