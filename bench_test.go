package lock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

type noopHook struct{}

func (noopHook) Observe(context.Context, lock.Event) {}

func benchPairs(b *testing.B, l lock.Locker) {
	ctx := context.Background()
	b.ReportAllocs()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		r := "bench/" + strconv.FormatInt(n.Add(1), 10)
		for pb.Next() {
			held, err := l.TryLock(ctx, r, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx, held); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

func BenchmarkSingleLockUnlock(b *testing.B) {
	for _, c := range []struct {
		name string
		hook lock.Hook
	}{{"no-hook", nil}, {"noop-hook", noopHook{}}} {
		b.Run(c.name, func(b *testing.B) {
			l, _ := lock.NewSingle(memory.New(), &lock.Options{Hook: c.hook})
			benchPairs(b, l)
		})
	}
}

func BenchmarkMultiLockUnlock(b *testing.B) {
	_, ls := memStores(5)
	l, _ := lock.NewMulti(ls, nil)
	benchPairs(b, l)
}

// A hook costs no allocation on the hot path: a lock+unlock pair
// allocates the same with a hook as without.
func TestHookAddsNoAllocation(t *testing.T) {
	ctx := context.Background()
	allocs := func(h lock.Hook) float64 {
		l, _ := lock.NewSingle(memory.New(), &lock.Options{Hook: h})
		return testing.AllocsPerRun(200, func() {
			held, err := l.TryLock(ctx, "res", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(ctx, held); err != nil {
				t.Fatal(err)
			}
		})
	}
	without, with := allocs(nil), allocs(noopHook{})
	if with != without {
		t.Errorf("lock+unlock allocates %v times with a hook, %v without; want the same", with, without)
	}
}
