package lock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// outcomes are the errors of which a call's error matches at most one.
var outcomes = []error{
	lock.ErrNotAcquired, lock.ErrNotHeld, lock.ErrUnavailable, lock.ErrInvalid, lock.ErrClosed,
	lock.ErrLost, lock.ErrMaxHold, context.Canceled, context.DeadlineExceeded,
}

// wantOnly fails t unless err matches want and no other outcome.
func wantOnly(t *testing.T, call string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s = %v; want %v", call, err, want)
	}
	for _, o := range outcomes {
		if o != want && errors.Is(err, o) {
			t.Errorf("%s = %v; matches %v as well as %v", call, err, o, want)
		}
	}
}

type causeError struct{ why string }

func (e *causeError) Error() string { return e.why }

// A context canceled with a cause — errgroup cancels its context with the
// first error of the group, which may be another call's ErrNotAcquired —
// ends a call with an error matching context.Canceled and no outcome the
// cause matches, while the cause itself stays in the chain.
func TestContextCauseIsNotAnOutcome(t *testing.T) {
	for _, kind := range []string{"single", "multi"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, ls := memStores(3)
				var l lock.Locker = mustSingle(t, ls[0], nil)
				if kind == "multi" {
					l = mustMulti(t, ls, nil)
				}
				held, err := l.TryLock(t.Context(), "a", time.Minute)
				wantNil(t, "TryLock(a)", err)
				_, contention := l.TryLock(t.Context(), "a", time.Minute)
				wantIs(t, "TryLock(a) again", contention, lock.ErrNotAcquired)

				for _, cause := range []error{contention, lock.ErrUnavailable, lock.ErrNotHeld, lock.ErrInvalid, lock.ErrLost, context.DeadlineExceeded} {
					ctx, cancel := context.WithCancelCause(t.Context())
					cancel(cause)
					_, err := l.TryLock(ctx, "b", time.Minute)
					wantOnly(t, fmt.Sprintf("TryLock(ctx canceled with cause %v)", cause), err, context.Canceled)
					_, err = l.Lock(ctx, "b", time.Minute)
					wantOnly(t, fmt.Sprintf("Lock(ctx canceled with cause %v)", cause), err, context.Canceled)
					_, err = l.IsLocked(ctx, "b")
					wantOnly(t, fmt.Sprintf("IsLocked(ctx canceled with cause %v)", cause), err, context.Canceled)
					_, err = l.Extend(ctx, held, time.Minute)
					wantOnly(t, fmt.Sprintf("Extend(ctx canceled with cause %v)", cause), err, context.Canceled)
				}

				why := &causeError{"the request was abandoned"}
				ctx, cancel := context.WithCancelCause(t.Context())
				cancel(why)
				_, err = l.TryLock(ctx, "b", time.Minute)
				wantOnly(t, "TryLock(ctx canceled with a cause of the caller's)", err, context.Canceled)
				var got *causeError
				if !errors.Is(err, why) || !errors.As(err, &got) || got != why {
					t.Errorf("TryLock(ctx canceled with a cause of the caller's) = %v; want the cause in the chain (errors.Is and errors.As)", err)
				}
				wantNil(t, "Unlock(a)", l.Unlock(t.Context(), held))
			})
		})
	}
}

// tokensFailingWith is a TokenGenerator that fails with its error.
type tokensFailingWith struct{ err error }

func (g tokensFailingWith) Token() (string, error) { return "", g.err }

// A TokenGenerator's error fails the call with ErrUnavailable, the
// generator's error in the chain, and no other outcome it may match: a
// generator timing out on a context of its own does not make a call
// whose context is alive read as DeadlineExceeded.
func TestTokenGeneratorErrorIsNotAnOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gen := &causeError{"entropy service"}
		for _, genErr := range []error{
			fmt.Errorf("%w: %w", gen, context.DeadlineExceeded),
			fmt.Errorf("%w: %w", gen, lock.ErrNotAcquired),
			fmt.Errorf("%w: %w", gen, lock.ErrInvalid),
		} {
			l := mustSingle(t, memory.New(), &lock.Options{Tokens: tokensFailingWith{genErr}})
			_, err := l.TryLock(t.Context(), "r", time.Minute)
			call := fmt.Sprintf("TryLock with a generator failing with %v", genErr)
			wantOnly(t, call, err, lock.ErrUnavailable)
			var got *causeError
			if !errors.Is(err, gen) || !errors.As(err, &got) {
				t.Errorf("%s = %v; want the generator's error in the chain", call, err)
			}
		}
	})
}
