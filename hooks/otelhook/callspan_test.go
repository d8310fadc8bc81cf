package otelhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/otelhook"
	"github.com/lockkit/lock/stores/memory"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// plainHook passes the events on to the otelhook but is no SpanHook, as a
// hook that fans events out to several others may be: the locker never
// calls Begin.
type plainHook struct{ h *otelhook.Hook }

func (p plainHook) Observe(ctx context.Context, e lock.Event) { p.h.Observe(ctx, e) }

// Without Begin, a call's last event has no span of its own to end: the
// caller's span, which the context carries, is left to the caller.
func TestCallerSpanNotEndedWithoutBegin(t *testing.T) {
	f := newFixture(t)
	l, err := lock.NewSingle(memory.New(), &lock.Options{Hook: plainHook{f.hook}})
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(context.Context){
		"TryLock": func(ctx context.Context) {
			k, _ := l.TryLock(ctx, "r", time.Minute)
			_ = l.Unlock(context.Background(), k)
		},
		"TryLock of a held lock": func(ctx context.Context) {
			k, _ := l.TryLock(context.Background(), "r", time.Minute)
			_, _ = l.TryLock(ctx, "r", time.Minute)
			_ = l.Unlock(context.Background(), k)
		},
		"Extend": func(ctx context.Context) {
			k, _ := l.TryLock(context.Background(), "r", time.Minute)
			_, _ = l.Extend(ctx, k, time.Minute)
			_ = l.Unlock(context.Background(), k)
		},
		"Unlock": func(ctx context.Context) {
			k, _ := l.TryLock(context.Background(), "r", time.Minute)
			_ = l.Unlock(ctx, k)
		},
	} {
		ctx, parent := sdktrace.NewTracerProvider().Tracer("caller").Start(context.Background(), "caller")
		call(ctx)
		if !parent.IsRecording() {
			t.Errorf("%s ended the caller's span; want it left to the caller", name)
		}
		parent.End()
	}
}
