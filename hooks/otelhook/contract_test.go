package otelhook_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// lock.held counts a lock once: a lock released twice (a deferred Unlock
// after an explicit one, say) does not take the count below zero, nor
// does an Unlock after an Extend that found the lock gone.
func TestHeldCountsEachLockOnce(t *testing.T) {
	f := newFixture(t)
	m := memory.New()
	l, err := lock.NewSingle(m, &lock.Options{Hook: f.hook})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, err := l.TryLock(ctx, "r", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Unlock(ctx, k)
	if err := l.Unlock(ctx, k); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second Unlock = %v; want ErrNotHeld", err)
	}
	if got := f.sums(t)["lock.held"]; got != 0 {
		t.Errorf("lock.held = %d after a lock released twice; want 0", got)
	}
	k, _ = l.TryLock(ctx, "r", time.Minute)
	m.Expire("r")
	if _, err := l.Extend(ctx, k, time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Extend of an expired lock = %v; want ErrNotHeld", err)
	}
	_ = l.Unlock(ctx, k)
	if got := f.sums(t)["lock.held"]; got != 0 {
		t.Errorf("lock.held = %d after Extend and Unlock found the lock gone; want 0", got)
	}
}

// A lock left to run out — RunOnce keeps its lock to the minimum
// interval's end and never releases it — is no longer counted once its
// validity has passed.
func TestHeldForgetsLocksPastTheirValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		l, err := lock.NewSingle(memory.New(), &lock.Options{Hook: f.hook})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		err = lock.RunOnce(ctx, l, "job", time.Second, func(context.Context, lock.Lock) error { return nil }, lock.MinInterval(time.Minute))
		if err != nil {
			t.Fatalf("RunOnce(job) = %v; want nil", err)
		}
		if got := f.sums(t)["lock.held"]; got != 1 {
			t.Errorf("lock.held = %d while RunOnce's minimum interval keeps the lock; want 1", got)
		}
		time.Sleep(time.Minute)
		if got := f.sums(t)["lock.held"]; got != 0 {
			t.Errorf("lock.held = %d after the minimum interval; want 0", got)
		}
	})
}

// Every span begun ends, whatever the call's outcome, and a call refused
// before it began (bad input) begins none; the caller's own span is
// never ended by the hook.
func TestEverySpanEnds(t *testing.T) {
	f := newFixture(t)
	m := memory.New(memory.WithName("mem"))
	l, err := lock.NewSingle(m, &lock.Options{Hook: f.hook})
	if err != nil {
		t.Fatal(err)
	}
	parentCtx, parent := sdktrace.NewTracerProvider().Tracer("caller").Start(context.Background(), "caller")
	ctx := parentCtx
	k, _ := l.TryLock(ctx, "r", time.Minute)
	_, _ = l.TryLock(ctx, "r", time.Minute) // contention
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, _ = l.Lock(short, "r", time.Minute) // canceled
	cancel()
	k, _ = l.Extend(ctx, k, time.Minute)
	m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errors.New("connection reset")})
	_, _ = l.Extend(ctx, k, time.Minute) // store failure
	_ = l.Unlock(ctx, k)
	_ = l.Unlock(ctx, k) // not held
	_, _ = l.Extend(ctx, k, time.Minute)
	// Refused before they begin:
	_, _ = l.TryLock(ctx, "", time.Minute)
	_, _ = l.Lock(ctx, "r", -time.Second)
	_, _ = l.Extend(ctx, lock.Lock{}, time.Minute)
	_ = l.Unlock(ctx, lock.Lock{})

	ended := map[string]int{}
	for _, s := range f.spans.Ended() {
		ended[s.Name()]++
	}
	if started, n := len(f.spans.Started()), len(f.spans.Ended()); started != n {
		t.Errorf("%d spans started, %d ended; want every span ended", started, n)
	}
	for name, want := range map[string]int{"lock.trylock": 2, "lock.lock": 1, "lock.extend": 3, "lock.unlock": 2} {
		if ended[name] != want {
			t.Errorf("%d %s spans ended; want %d (spans %v)", ended[name], name, want, ended)
		}
	}
	if !parent.IsRecording() {
		t.Error("the caller's span was ended by the hook; want it left to the caller")
	}
	parent.End()
}

// The instruments are those the package documents, with their kinds and
// units, and no metric carries the resource name.
func TestMetricsAsDocumented(t *testing.T) {
	f := newFixture(t)
	m := memory.New(memory.WithName("mem"))
	l, _ := lock.NewSingle(m, &lock.Options{Hook: f.hook})
	ctx := context.Background()
	k, _ := l.TryLock(ctx, "r", time.Minute)
	_, _ = l.TryLock(ctx, "r", time.Minute)
	m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errors.New("connection reset")})
	_, _ = l.Extend(ctx, k, time.Minute)
	_ = lock.Run(ctx, l, "job", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
		m.Expire("job")
		<-ctx.Done()
		return nil
	})

	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	type kind struct {
		unit      string
		histogram bool
		monotonic bool
	}
	want := map[string]kind{
		"lock.acquire.duration": {"s", true, false},
		"lock.store.duration":   {"s", true, false},
		"lock.contention":       {"{attempt}", false, true},
		"lock.lost":             {"{lock}", false, true},
		"lock.held":             {"{lock}", false, false},
		"lock.store.errors":     {"{call}", false, true},
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			w, ok := want[mt.Name]
			if !ok {
				t.Errorf("metric %s is not documented", mt.Name)
				continue
			}
			seen[mt.Name] = true
			if mt.Unit != w.unit {
				t.Errorf("%s has unit %q; want %q", mt.Name, mt.Unit, w.unit)
			}
			switch d := mt.Data.(type) {
			case metricdata.Histogram[float64]:
				if !w.histogram {
					t.Errorf("%s is a histogram; want a counter", mt.Name)
				}
				for _, p := range d.DataPoints {
					if _, ok := p.Attributes.Value("lock.resource"); ok {
						t.Errorf("%s carries lock.resource; want it on spans only", mt.Name)
					}
				}
			case metricdata.Sum[int64]:
				if w.histogram || d.IsMonotonic != w.monotonic {
					t.Errorf("%s is a sum, monotonic %v; want histogram %v, monotonic %v", mt.Name, d.IsMonotonic, w.histogram, w.monotonic)
				}
				for _, p := range d.DataPoints {
					if _, ok := p.Attributes.Value("lock.resource"); ok {
						t.Errorf("%s carries lock.resource; want it on spans only", mt.Name)
					}
				}
			default:
				t.Errorf("%s has data %T", mt.Name, mt.Data)
			}
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("metric %s was not reported", name)
		}
	}
}

// The hook is used by many goroutines at once (run with -race): the
// counts come out exact.
func TestConcurrentUse(t *testing.T) {
	f := newFixture(t)
	l, _ := lock.NewSingle(memory.New(), &lock.Options{Hook: f.hook})
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k, err := l.TryLock(ctx, string(rune('a'+g))+string(rune('a'+i%5)), time.Minute)
				if err != nil {
					t.Errorf("TryLock = %v", err)
					return
				}
				_ = l.Unlock(ctx, k)
			}
		}()
	}
	wg.Wait()
	s := f.sums(t)
	if s["lock.held"] != 0 || s["lock.acquire.duration"] != 400 || s["lock.store.duration"] != 800 {
		t.Errorf("lock.held = %d, lock.acquire.duration count = %d, lock.store.duration count = %d; want 0, 400, 800", s["lock.held"], s["lock.acquire.duration"], s["lock.store.duration"])
	}
}

// Observe takes any Event, such as one a test or another locker builds:
// an EventLost without its cause is counted, not a panic.
func TestObserveEventsWithoutErrors(t *testing.T) {
	f := newFixture(t)
	for k := lock.EventAttempt; k <= lock.EventLost; k++ {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("Observe(%v without Err) panicked: %v", k, p)
				}
			}()
			f.hook.Observe(context.Background(), lock.Event{Kind: k, Op: "lock", Resource: "r"})
		}()
	}
	if got := f.sums(t)["lock.lost"]; got != 1 {
		t.Errorf("lock.lost = %d after an EventLost; want 1", got)
	}
}
