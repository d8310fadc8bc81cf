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

// A function that returns while an extension hangs in the store is done:
// Run releases the lock at once, and reports no loss, rather than wait
// for the stuck extension until the lock's validity has run out.
func TestRunReturnsWhileAnExtensionHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		var lost []lock.Event
		hooked := mustSingle(t, m, &lock.Options{Hook: sxHookFunc(func(_ context.Context, e lock.Event) {
			if e.Kind == lock.EventLost {
				lost = append(lost, e)
			}
		})})
		for _, locker := range []lock.Locker{l, hooked} {
			start := time.Now()
			var held lock.Lock
			err := lock.Run(t.Context(), locker, "res", 3*time.Second, func(ctx context.Context, h lock.Lock) error {
				held = h
				m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: time.Hour})
				time.Sleep(1500 * time.Millisecond) // past the first extension, now stuck
				return ctx.Err()
			})
			m.ClearFaults()
			wantNil(t, "Run() whose function returned while an extension hung", err)
			if took := time.Since(start); !start.Add(took).Before(held.ValidUntil) {
				t.Errorf("Run() returned %v after it began, past the lock's validity (%v); want at once when the function returned (1.5s)", took, held.ValidUntil.Sub(start))
			}
			noResidue(t, m)
		}
		if len(lost) != 0 {
			t.Errorf("hook told %v; want no EventLost for a lock released in time", lost)
		}
	})
}

// Resign during a renewal that hangs in the store ends the term at once,
// within Resign's context, and reports no loss.
func TestTermResignWhileARenewalHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", 3*time.Second)
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: time.Hour})
		time.Sleep(1500 * time.Millisecond) // past the first renewal, now stuck
		end := term.ValidUntil()
		start := time.Now()
		err = term.Resign(t.Context())
		m.ClearFaults()
		wantNil(t, "Resign() during a hung renewal", err)
		if !time.Now().Before(end) {
			t.Errorf("Resign() returned %v after it was called, past the term's end (%v later); want at once", time.Since(start), end.Sub(start))
		}
		wantIs(t, "term context's cause after Resign", context.Cause(term.Context()), lock.ErrResigned)
		noResidue(t, m)
	})
}

// Lead keeps fn's own error when it wraps the term's loss: the loss is
// reported once, and what fn said with it is not dropped.
func TestLeadKeepsTheFunctionsErrorThatWrapsTheLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		flush := errors.New("flush failed")
		err := e.Lead(t.Context(), func(ctx context.Context, _ *lock.Term) error {
			m.Expire("leader")
			<-ctx.Done()
			return fmt.Errorf("%w: %w", flush, context.Cause(ctx))
		})
		wantIs(t, "Lead() whose fn returned its own error wrapping the loss", err, flush)
		wantIs(t, "Lead() whose fn returned its own error wrapping the loss", err, lock.ErrLost)

		// As Run does.
		err = lock.Run(t.Context(), mustSingle(t, m, nil), "res", time.Second, func(ctx context.Context, _ lock.Lock) error {
			m.Expire("res")
			<-ctx.Done()
			return fmt.Errorf("%w: %w", flush, context.Cause(ctx))
		})
		wantIs(t, "Run() whose fn returned its own error wrapping the loss", err, flush)
		noResidue(t, m)
	})
}

// A slow acquisition leaves the lock less of its validity than the ttl
// promises: Run's first extension comes within what is left, and the
// lock is kept.
func TestRunFirstExtensionWithinASlowAcquisitionsValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 8 * time.Second})
		err := lock.Run(t.Context(), l, "res", 10*time.Second, func(ctx context.Context, _ lock.Lock) error {
			time.Sleep(20 * time.Second)
			return context.Cause(ctx)
		})
		wantNil(t, "Run(ttl 10s) whose acquisition took 8s", err)
		noResidue(t, m)

		// A term likewise.
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 8 * time.Second})
		e := mustElection(t, l, "leader", 10*time.Second)
		err = e.Lead(t.Context(), func(ctx context.Context, _ *lock.Term) error {
			time.Sleep(20 * time.Second)
			return context.Cause(ctx)
		})
		wantNil(t, "Lead(ttl 10s) whose campaign took 8s", err)
		noResidue(t, m)
	})
}

// An election keeps the options it was made with: changing the caller's
// slice afterwards changes nothing, and cannot slip past NewElection's
// checks.
func TestElectionKeepsItsOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		_, err := l.Lock(t.Context(), "leader", time.Hour)
		wantNil(t, "Lock(leader)", err)
		opts := []lock.LockOption{lock.WithRetry(lock.NoRetry)}
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second, opts...)
		opts[0] = lock.WithRetry(lock.Retry{Attempts: lock.Forever})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err = e.Campaign(ctx)
		wantIs(t, "Campaign() of an election made with NoRetry, while another leads", err, lock.ErrNotAcquired)
		if ctx.Err() != nil {
			t.Errorf("Campaign() waited until its context ended; want one attempt, as the election was made with NoRetry")
		}
	})
}
