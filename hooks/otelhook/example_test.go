package otelhook_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/otelhook"
	"github.com/lockkit/lock/stores/memory"
)

// Trace a locker's calls. A real service passes its own providers (or nil
// for the global ones); this example records the spans in memory to show
// them.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	hook, err := otelhook.New(tp, nil) // nil: the global meter provider
	if err != nil {
		panic(err)
	}
	locker, err := lock.NewSingle(memory.New(memory.WithName("mem")), &lock.Options{Hook: hook})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	l, err := locker.TryLock(ctx, "orders/42", time.Minute)
	if err != nil {
		panic(err)
	}
	if err := locker.Unlock(ctx, l); err != nil {
		panic(err)
	}

	// A span per locker call, with a child span per store call (ended
	// first).
	for _, s := range spans.Ended() {
		fmt.Println(s.Name())
	}
	// Output:
	// lock.store.acquire
	// lock.trylock
	// lock.store.release
	// lock.unlock
}

// The hook's metrics, read here with a manual reader: a lock taken, one
// refused, the lock released.
func Example_metrics() {
	reader := sdkmetric.NewManualReader()
	hook, err := otelhook.New(nil, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		panic(err)
	}
	locker, err := lock.NewSingle(memory.New(), &lock.Options{Hook: hook})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	l, _ := locker.TryLock(ctx, "orders/42", time.Minute)
	_, _ = locker.TryLock(ctx, "orders/42", time.Minute) // held: contention
	_ = locker.Unlock(ctx, l)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			var n uint64
			for _, p := range d.DataPoints {
				n += p.Count
			}
			fmt.Printf("%s (%s): %d recorded\n", m.Name, m.Unit, n)
		case metricdata.Sum[int64]:
			var v int64
			for _, p := range d.DataPoints {
				v += p.Value
			}
			fmt.Printf("%s: %d\n", m.Name, v)
		}
	}
	// Output:
	// lock.acquire.duration (s): 2 recorded
	// lock.store.duration (s): 3 recorded
	// lock.contention: 1
	// lock.held: 0
}
