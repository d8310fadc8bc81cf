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

// The cost of Redlock's fences: lock+unlock pairs over five memory stores
// that answer after a delay (a network round trip, made by a goroutine
// and a timer per call), fenced and unfenced (Options.NoFence), one name
// per goroutine or a fresh name per lock. "latency": one goroutine, ns/op
// is a pair's latency; "throughput": 16 goroutines per processor, pairs/s.
//
//	go test -run '^$' -bench 'MultiFence' -count 6 .
func BenchmarkMultiFence(b *testing.B) {
	for _, mode := range []string{"latency", "throughput"} {
		for _, fresh := range []bool{false, true} {
			for _, noFence := range []bool{false, true} {
				name := mode + map[bool]string{false: "/reused", true: "/fresh"}[fresh] +
					map[bool]string{false: "/fenced", true: "/nofence"}[noFence]
				b.Run(name, func(b *testing.B) {
					ms, ls := memStores(5)
					for _, m := range ms {
						m.Inject(memory.Fault{Delay: 200 * time.Microsecond, Times: memory.Always})
					}
					l, _ := lock.NewMulti(ls, &lock.Options{NoFence: noFence, StoreTimeout: time.Second})
					par := 16
					if mode == "latency" {
						par = 1
					}
					benchNames(b, l, fresh, par)
				})
			}
		}
	}
}

// benchNames runs lock+unlock pairs on par goroutines per processor (one
// in all if par is 1): each on a name of its own, or on a fresh name per
// pair.
func benchNames(b *testing.B, l lock.Locker, fresh bool, par int) {
	ctx := context.Background()
	b.ReportAllocs()
	var n atomic.Int64
	run := func(next func() bool) {
		r := "bench/" + strconv.FormatInt(n.Add(1), 10)
		for i := 0; next(); i++ {
			name := r
			if fresh {
				name = r + "/" + strconv.Itoa(i)
			}
			held, err := l.TryLock(ctx, name, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx, held); err != nil {
				b.Fatal(err)
			}
		}
	}
	if par == 1 {
		i := 0
		run(func() bool { i++; return i <= b.N })
	} else {
		b.SetParallelism(par)
		b.RunParallel(func(pb *testing.PB) { run(pb.Next) })
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
