package otelhook_test

import (
	"context"
	"fmt"
	"time"

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
