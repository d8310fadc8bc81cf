package otelhook

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/lockkit/lock"
)

const scope = "github.com/lockkit/lock/hooks/otelhook"

// Hook is a lock.SpanHook reporting to OpenTelemetry. Make it with New:
// the zero Hook has no tracer or instruments.
type Hook struct {
	tracer          trace.Tracer
	acquireDuration metric.Float64Histogram
	storeDuration   metric.Float64Histogram
	contention      metric.Int64Counter
	lost            metric.Int64Counter
	storeErrors     metric.Int64Counter
	held            heldLocks           // observed as lock.held
	heldReport      metric.Registration // the callback that observes it
}

var _ lock.SpanHook = (*Hook)(nil)

// New returns a Hook using tp and mp; nil selects the global providers.
func New(tp trace.TracerProvider, mp metric.MeterProvider) (*Hook, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(scope)
	h := &Hook{tracer: tp.Tracer(scope)}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	h.acquireDuration, err = m.Float64Histogram("lock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time Lock and TryLock calls took."))
	add(err)
	h.storeDuration, err = m.Float64Histogram("lock.store.duration", metric.WithUnit("s"),
		metric.WithDescription("Time store calls took."))
	add(err)
	h.contention, err = m.Int64Counter("lock.contention", metric.WithUnit("{attempt}"),
		metric.WithDescription("Acquisition attempts that found the resource held by another owner."))
	add(err)
	h.lost, err = m.Int64Counter("lock.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks lost while their holder ran."))
	add(err)
	held, err := m.Int64ObservableUpDownCounter("lock.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks acquired and not yet released, lost or past their validity."))
	add(err)
	h.storeErrors, err = m.Int64Counter("lock.store.errors", metric.WithUnit("{call}"),
		metric.WithDescription("Store calls that failed."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h.heldReport, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(held, int64(h.held.count(time.Now())))
		return nil
	}, held)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Close stops reporting lock.held for h: the meter provider keeps the
// callback that observes it, and with it h, until Close (or until the
// provider shuts down). Call it once h's lockers are done, if the
// provider outlives them: one made per locker, say. h still reports its
// spans and its other metrics. Close is safe to call more than once.
func (h *Hook) Close() error {
	if h.heldReport == nil {
		return nil
	}
	return h.heldReport.Unregister()
}

// Begin implements lock.SpanHook: it starts the call's span.
func (h *Hook) Begin(ctx context.Context, op, resource string) context.Context {
	ctx, span := h.tracer.Start(ctx, "lock."+op, trace.WithAttributes(
		attribute.String("lock.op", op), attribute.String("lock.resource", resource)))
	ctx = context.WithValue(ctx, callSpanKey{}, span)
	return withAttempts(ctx, op)
}

type callSpanKey struct{}

// callSpan returns the span Begin started for the call whose event is
// observed in ctx, or a span that records nothing: a call's last event
// ends its own span only, never one of the caller's (when a hook wrapping
// this one does not pass Begin on, say).
func callSpan(ctx context.Context) trace.Span {
	span, ok := ctx.Value(callSpanKey{}).(trace.Span)
	if !ok || !span.SpanContext().Equal(trace.SpanFromContext(ctx).SpanContext()) {
		return noop.Span{}
	}
	return span
}

// Observe implements lock.Hook.
func (h *Hook) Observe(ctx context.Context, e lock.Event) {
	span := trace.SpanFromContext(ctx)
	call := attemptsOf(ctx)
	call.observe(e)
	switch e.Kind {
	case lock.EventStoreCall:
		h.storeCall(ctx, span, e)
	case lock.EventQuorum:
		span.AddEvent("quorum", trace.WithAttributes(
			attribute.Int("lock.granted", e.Granted), attribute.Int("lock.refused", e.Refused), attribute.Int("lock.failed", e.Failed)))
	case lock.EventRetry:
		if call.takeRefusal() || errors.Is(e.Err, lock.ErrNotAcquired) {
			h.contention.Add(ctx, 1)
		}
		span.AddEvent("retry", trace.WithAttributes(
			attribute.Int("lock.attempt", e.Attempt), attribute.Int64("lock.delay_ms", e.Delay.Milliseconds()), attribute.Bool("lock.waiting", e.Waiting)))
	case lock.EventAcquired:
		h.acquireDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attribute.String("lock.op", e.Op), attribute.String("lock.outcome", "ok")))
		h.held.acquired(e.Lock, time.Now())
		own := callSpan(ctx)
		own.SetAttributes(attribute.Int("lock.attempts", e.Attempt), attribute.Int64("lock.fence", int64(e.Lock.Fence)))
		own.End()
	case lock.EventNotAcquired:
		o := outcome(e.Err)
		h.acquireDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attribute.String("lock.op", e.Op), attribute.String("lock.outcome", o)))
		// The last attempt is counted here unless a retry was: it may
		// have found the resource held even when the call reports its
		// context's end.
		if call.takeRefusal() || o == "contention" {
			h.contention.Add(ctx, 1)
		}
		own := callSpan(ctx)
		own.SetAttributes(attribute.Int("lock.attempts", e.Attempt), attribute.String("lock.outcome", o))
		end(own, e.Err, o)
	case lock.EventReleased:
		if e.Err == nil || errors.Is(e.Err, lock.ErrNotHeld) {
			h.held.gone(e.Lock) // counted once, however often it is released
		}
		end(callSpan(ctx), e.Err, outcome(e.Err))
	case lock.EventExtended:
		switch {
		case e.Err == nil:
			h.held.acquired(e.Lock, time.Now()) // its new validity
		case errors.Is(e.Err, lock.ErrNotHeld):
			h.held.gone(e.Lock)
		}
		end(callSpan(ctx), e.Err, outcome(e.Err))
	case lock.EventLost:
		h.lost.Add(ctx, 1)
		h.held.gone(e.Lock)
		attrs := []attribute.KeyValue{attribute.String("lock.resource", e.Resource)}
		if e.Err != nil {
			attrs = append(attrs, attribute.String("error", e.Err.Error()))
		}
		span.AddEvent("lock lost", trace.WithAttributes(attrs...))
	}
}

func (h *Hook) storeCall(ctx context.Context, parent trace.Span, e lock.Event) {
	o := storeOutcome(ctx, e.Err)
	store := attribute.String("lock.store", e.Store)
	storeOp := attribute.String("lock.store.op", e.StoreOp)
	h.storeDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(store, storeOp, attribute.String("lock.outcome", o)))
	failed := isFailure(o)
	if failed {
		h.storeErrors.Add(ctx, 1, metric.WithAttributes(store, storeOp))
	}
	if !parent.SpanContext().IsSampled() {
		return // not traced (a store call may also end after its call's span did)
	}
	now := time.Now()
	_, span := h.tracer.Start(ctx, "lock.store."+e.StoreOp, trace.WithTimestamp(now.Add(-e.Duration)),
		trace.WithAttributes(store, storeOp, attribute.Int("lock.store.index", e.StoreIndex), attribute.String("lock.outcome", o)))
	if failed {
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(now))
}

// end ends a call's span, marking it failed when the outcome is a failure.
func end(span trace.Span, err error, o string) {
	if isFailure(o) {
		span.SetStatus(codes.Error, err.Error())
	}
	if err != nil {
		span.SetAttributes(attribute.String("lock.outcome", o))
	}
	span.End()
}

func isFailure(o string) bool { return o == "unavailable" || o == "invalid" || o == "error" }

// outcome classifies the error of a locker call for attributes. The
// lockers' errors match context.Canceled or context.DeadlineExceeded only
// when the caller's context ended.
func outcome(err error) string {
	return classify(err, true)
}

// storeOutcome classifies the error of a store call observed in ctx, the
// call's context, for attributes. A store's error is the store's own: one
// that wraps a context error is "canceled" only if ctx ended; while ctx
// is alive (a client's own timeout, say) it is a failure.
func storeOutcome(ctx context.Context, err error) string {
	return classify(err, ctx.Err() != nil)
}

// classify classifies err for attributes; a context error in err's chain
// is "canceled" only if ctxEnded.
func classify(err error, ctxEnded bool) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, lock.ErrNotAcquired):
		return "contention"
	case errors.Is(err, lock.ErrNotHeld):
		return "not_held"
	case ctxEnded && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return "canceled"
	case errors.Is(err, lock.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, lock.ErrInvalid):
		return "invalid"
	}
	return "error"
}
