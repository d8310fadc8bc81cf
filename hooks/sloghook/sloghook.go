package sloghook

import (
	"context"
	"errors"
	"log/slog"

	"github.com/lockkit/lock"
)

// Hook is a lock.Hook that logs to a slog.Logger. It is safe for
// concurrent use. The zero value logs to slog.Default().
type Hook struct {
	logger *slog.Logger
}

var _ lock.Hook = (*Hook)(nil)

// New returns a Hook logging to logger; with nil, to slog.Default() as it
// is at each event, as the zero Hook does.
func New(logger *slog.Logger) *Hook {
	return &Hook{logger: logger}
}

// Observe implements lock.Hook.
func (h *Hook) Observe(ctx context.Context, e lock.Event) {
	logger := h.logger
	if logger == nil {
		logger = slog.Default()
	}
	level := LevelContext(ctx, e)
	if !logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("op", e.Op), slog.String("resource", e.Resource))
	switch e.Kind {
	case lock.EventStoreCall:
		attrs = append(attrs, slog.String("store", e.Store), slog.Int("store_index", e.StoreIndex), slog.String("store_op", e.StoreOp), slog.Duration("duration", e.Duration))
	case lock.EventQuorum:
		attrs = append(attrs, slog.Int("granted", e.Granted), slog.Int("refused", e.Refused), slog.Int("failed", e.Failed), slog.Duration("duration", e.Duration))
	case lock.EventAttempt:
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	case lock.EventRetry:
		attrs = append(attrs, slog.Int("attempt", e.Attempt), slog.Duration("delay", e.Delay), slog.Bool("waiting", e.Waiting))
	case lock.EventAcquired, lock.EventNotAcquired:
		attrs = append(attrs, slog.Int("attempts", e.Attempt), slog.Duration("duration", e.Duration))
	case lock.EventReleased, lock.EventExtended:
		attrs = append(attrs, slog.Duration("duration", e.Duration))
	}
	if e.Lock.Fence != 0 {
		attrs = append(attrs, slog.Uint64("fence", e.Lock.Fence))
	}
	if !e.Lock.ValidUntil.IsZero() && (e.Kind == lock.EventAcquired || e.Kind == lock.EventExtended) && e.Err == nil {
		attrs = append(attrs, slog.Time("valid_until", e.Lock.ValidUntil))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	logger.LogAttrs(ctx, level, "lock "+e.Kind.String(), attrs...)
}

// Level returns the level at which Hook logs e, taking a failed store
// call whose error wraps context.Canceled or context.DeadlineExceeded for
// the end of the call's context, which e does not carry: Observe, which
// has the context, uses LevelContext.
func Level(e lock.Event) slog.Level { return level(e, true) }

// LevelContext returns the level at which Hook logs e observed in ctx, the
// context Observe is given. A store call that failed because ctx ended
// (ctx.Err() is not nil, and the store's error wraps context.Canceled or
// context.DeadlineExceeded) is logged at Debug, as the call's end rather
// than a store failure; a store's error that wraps a context error while
// ctx is alive (a client's own timeout, say) is a store failure, logged at
// Warn.
func LevelContext(ctx context.Context, e lock.Event) slog.Level {
	return level(e, ctx.Err() != nil)
}

// level is LevelContext for a context that ended if ended.
func level(e lock.Event, ended bool) slog.Level {
	failed := e.Err != nil && !errors.Is(e.Err, lock.ErrNotAcquired) && !errors.Is(e.Err, lock.ErrNotHeld)
	switch e.Kind {
	case lock.EventLost:
		return slog.LevelError
	case lock.EventStoreCall:
		if failed && !(ended && contextError(e.Err)) {
			return slog.LevelWarn
		}
	case lock.EventReleased, lock.EventExtended:
		if e.Err != nil {
			return slog.LevelWarn
		}
	case lock.EventNotAcquired:
		if errors.Is(e.Err, lock.ErrUnavailable) {
			return slog.LevelWarn
		}
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// contextError reports whether err wraps a context's error.
func contextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
