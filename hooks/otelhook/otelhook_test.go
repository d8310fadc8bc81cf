package otelhook_test

import (
	"context"
	"errors"
	"maps"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/otelhook"
	"github.com/lockkit/lock/stores/memory"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type fixture struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	hook   *otelhook.Hook
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	var err error
	if f.hook, err = otelhook.New(tp, mp); err != nil {
		t.Fatal(err)
	}
	return f
}

// sums returns the value of every counter and up-down counter, and the
// count of every histogram, by instrument name.
func (f *fixture) sums(t *testing.T) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] += int64(p.Count)
				}
			}
		}
	}
	return out
}

func TestSpansAndMetrics(t *testing.T) {
	f := newFixture(t)
	var stores []lock.Store
	var mems []*memory.Store
	for _, n := range []string{"a", "b", "c"} {
		m := memory.New(memory.WithName(n))
		mems = append(mems, m)
		stores = append(stores, m)
	}
	mems[1].Inject(memory.Fault{Ops: memory.OpAcquire, Err: errors.New("connection reset"), Times: memory.Always})
	l, err := lock.NewMulti(stores, &lock.Options{Hook: f.hook, StoreTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	held, err := l.TryLock(ctx, "orders/7", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.sums(t)["lock.held"]; got != 1 {
		t.Errorf("lock.held = %d after a lock; want 1", got)
	}
	_, err = l.TryLock(ctx, "orders/7", time.Minute)
	if !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("second TryLock = %v; want ErrNotAcquired", err)
	}
	if err := l.Unlock(ctx, held); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // let straggling store calls of the first attempt end

	m := f.sums(t)
	for name, want := range map[string]int64{
		"lock.held":             0,
		"lock.contention":       1,
		"lock.acquire.duration": 2,
		"lock.store.errors":     2,
		"lock.store.duration":   10, // 3 acquire, 3 acquire, a cleanup release on the failing store, 3 release
	} {
		if m[name] != want {
			t.Errorf("%s = %d; want %d", name, m[name], want)
		}
	}

	var names []string
	parents := map[string]int{} // "span<parent" -> count
	byID := map[string]string{}
	for _, s := range f.spans.Ended() {
		byID[s.SpanContext().SpanID().String()] = s.Name()
	}
	var failedStoreSpan bool
	for _, s := range f.spans.Ended() {
		names = append(names, s.Name())
		parents[s.Name()+"<"+byID[s.Parent().SpanID().String()]]++
		if s.Name() == "lock.store.acquire" && s.Status().Code == codes.Error {
			failedStoreSpan = true
		}
	}
	sort.Strings(names)
	want := "lock.store.acquire,lock.store.acquire,lock.store.acquire,lock.store.acquire,lock.store.acquire,lock.store.acquire,lock.store.release,lock.store.release,lock.store.release,lock.store.release,lock.trylock,lock.trylock,lock.unlock"
	if strings.Join(names, ",") != want {
		t.Errorf("spans %v; want %s", names, want)
	}
	// Every store call is a child of its call's span: the acquisitions of
	// the two TryLocks, the cleanup release of the failed one, and the
	// three releases of Unlock.
	if want := map[string]int{"lock.store.acquire<lock.trylock": 6, "lock.store.release<lock.trylock": 1, "lock.store.release<lock.unlock": 3, "lock.trylock<": 2, "lock.unlock<": 1}; !maps.Equal(parents, want) {
		t.Errorf("store spans are not children of their call's span: %v", parents)
	}
	if !failedStoreSpan {
		t.Error("the failing store's span is not marked as an error")
	}
}

func TestLostLockCounted(t *testing.T) {
	f := newFixture(t)
	store := memory.New()
	l, _ := lock.NewSingle(store, &lock.Options{Hook: f.hook})
	err := lock.Run(context.Background(), l, "job", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
		store.Expire("job")
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, lock.ErrLost) {
		t.Fatalf("Run() = %v; want ErrLost", err)
	}
	m := f.sums(t)
	if m["lock.lost"] != 1 || m["lock.held"] != 0 {
		t.Errorf("lock.lost = %d, lock.held = %d; want 1 and 0", m["lock.lost"], m["lock.held"])
	}
}
