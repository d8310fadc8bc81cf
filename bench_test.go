package lock_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
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
		o    lock.Options
	}{
		{"no-hook", lock.Options{}},
		{"noop-hook", lock.Options{Hook: noopHook{}}},
		{"holder", lock.Options{Holder: "build-7 4242 make deploy 2026-11-24T20:00:00Z"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l, err := lock.NewSingle(memory.New(), &c.o)
			if err != nil {
				b.Fatal(err)
			}
			benchPairs(b, l)
		})
	}
}

func BenchmarkMultiLockUnlock(b *testing.B) {
	_, ls := memStores(5)
	l, err := lock.NewMulti(ls, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchPairs(b, l)
}

// A hook costs no allocation on the hot path: a lock+unlock pair
// allocates the same with a hook as without.
func TestHookAddsNoAllocation(t *testing.T) {
	ctx := context.Background()
	allocs := func(h lock.Hook) float64 {
		l, err := lock.NewSingle(memory.New(), &lock.Options{Hook: h})
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(3200, func() { // tokens come 32 to an allocation
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
					l, err := lock.NewMulti(ls, &lock.Options{NoFence: noFence, StoreTimeout: time.Second})
					if err != nil {
						b.Fatal(err)
					}
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

// Contention on a store that cannot notify releases (memcached, here a
// memory store without its Waiter): 16 workers lock one name, hold it 1ms
// and unlock, again and again, for b.N acquisitions in all. "lockkit" is a SingleLocker with its
// default policy; "backoff-500ms" is DefaultRetry itself, which backs off
// from 10ms to 500ms (the default on such stores before); "poll-10ms"
// tries every 10ms, the simple poller to match. Each worker pauses 1ms after its release before it locks again.
// It reports the waits' p50, p99 and max and how many acquisitions
// the least served worker got (min-per-worker: 0 means one starved).
//
//	go test -run '^$' -bench 'PollingContention' -benchtime 2000x -count 3 .
func BenchmarkPollingContention(b *testing.B) {
	const workers, hold = 16, time.Millisecond
	policies := []struct {
		name string
		lock func(ctx context.Context, l lock.Locker) (lock.Lock, error)
	}{
		{"lockkit", func(ctx context.Context, l lock.Locker) (lock.Lock, error) {
			return l.Lock(ctx, "contended", time.Minute)
		}},
		{"backoff-500ms", func(ctx context.Context, l lock.Locker) (lock.Lock, error) {
			return l.Lock(ctx, "contended", time.Minute, lock.WithRetry(lock.DefaultRetry))
		}},
		{"poll-10ms", func(ctx context.Context, l lock.Locker) (lock.Lock, error) {
			for {
				held, err := l.TryLock(ctx, "contended", time.Minute)
				if !errors.Is(err, lock.ErrNotAcquired) {
					return held, err
				}
				time.Sleep(10 * time.Millisecond)
			}
		}},
	}
	for _, p := range policies {
		b.Run(p.name, func(b *testing.B) {
			l, err := lock.NewSingle(basic{memory.New()}, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var left atomic.Int64
			left.Store(int64(b.N))
			waits := make([][]time.Duration, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						t0 := time.Now()
						held, err := p.lock(ctx, l)
						if err != nil {
							b.Error(err)
							return
						}
						waits[w] = append(waits[w], time.Since(t0))
						time.Sleep(hold)
						_ = l.Unlock(ctx, held)
						time.Sleep(hold)
					}
				})
			}
			wg.Wait()
			var all []time.Duration
			least := b.N
			for _, ws := range waits {
				all = append(all, ws...)
				least = min(least, len(ws))
			}
			slices.Sort(all)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
			b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
			b.ReportMetric(ms(all[len(all)-1]), "max-ms")
			b.ReportMetric(float64(least), "min-per-worker")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acq/s")
		})
	}
}
