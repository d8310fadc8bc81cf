package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// hungExtend is a memory store whose Extend does not answer until its
// context ends, and then fails as a client's timeout does.
type hungExtend struct{ *memory.Store }

func (h hungExtend) Extend(ctx context.Context, _, _ string, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// The deadlines Run sets itself — the release's (the TTL), an
// extension's (the lock's validity), RunOnce's keeping of its interval,
// a resignation's — are not the caller's: a call they end is a store
// failure (ErrUnavailable, or the loss it causes), never an error that
// matches context.DeadlineExceeded while the caller's context is alive.
func TestRunOwnDeadlinesAreNotTheCallers(t *testing.T) {
	check := func(t *testing.T, call string, err error, want error) {
		t.Helper()
		wantIs(t, call, err, want)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s = %v; want no match for context.DeadlineExceeded: the caller's context did not end", call, err)
		}
	}
	t.Run("release", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := memory.New()
			l := mustSingle(t, m, nil)
			m.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Hour})
			err := lock.Run(t.Context(), l, "r", 3*time.Second, func(context.Context, lock.Lock) error { return nil })
			check(t, "Run() whose release was not answered", err, lock.ErrUnavailable)
		})
	})
	t.Run("resign", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := memory.New()
			e := mustElection(t, mustSingle(t, m, nil), "role", 3*time.Second)
			term, err := e.Campaign(t.Context())
			wantNil(t, "Campaign()", err)
			m.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Hour})
			check(t, "Resign() not answered", term.Resign(t.Context()), lock.ErrUnavailable)
		})
	})
	t.Run("extension", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := memory.New()
			l := mustSingle(t, hungExtend{m}, nil)
			err := lock.Run(t.Context(), l, "r", 3*time.Second, func(ctx context.Context, _ lock.Lock) error {
				<-ctx.Done() // the lock is lost: no extension was answered
				return nil
			})
			check(t, "Run() whose extensions were not answered", err, lock.ErrLost)
		})
	})
}

// Lead's function, whose context ends with Lead's ctx, sees ctx's error:
// context.DeadlineExceeded when ctx's deadline passed (it saw the
// Canceled of the term's cancellation), and so do the contexts it derives
// from it (which saw Canceled when fn's own did not); Lead returns it.
func TestLeadContextEndsWithCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustElection(t, mustSingle(t, memory.New(), nil), "role", 10*time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		var seen, derived error
		err := e.Lead(ctx, func(tctx context.Context, _ *lock.Term) error {
			child, cancel := context.WithCancel(tctx)
			defer cancel()
			<-child.Done()
			seen, derived = tctx.Err(), child.Err()
			return seen
		})
		if !errors.Is(seen, context.DeadlineExceeded) {
			t.Errorf("Lead's function's ctx.Err() once Lead's ctx timed out = %v; want context.DeadlineExceeded", seen)
		}
		if !errors.Is(derived, context.DeadlineExceeded) {
			t.Errorf("Err() of a context derived from Lead's function's, once Lead's ctx timed out = %v; want context.DeadlineExceeded", derived)
		}
		wantIs(t, "Lead() whose ctx timed out", err, context.DeadlineExceeded)
	})
}

// Lead renews the term until fn returns, also once Lead's ctx has ended
// (fn's context then ends with ctx's error): a function that cleans up
// for several TTLs after ctx ended still leads, and another candidate
// cannot campaign in meanwhile. Built on ctx, the term's renewals stopped
// with it, and the term was lost while fn ran (another took the role).
func TestLeadRenewsAfterCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		store := memory.New()
		e := mustElection(t, mustSingle(t, store, nil), "role", ttl)
		rival := mustElection(t, mustSingle(t, store, nil), "role", ttl, lock.WithRetry(lock.NoRetry))
		ctx, cancel := context.WithCancel(t.Context())
		err := e.Lead(ctx, func(tctx context.Context, term *lock.Term) error {
			cancel()
			<-tctx.Done()
			time.Sleep(3 * ttl) // cleaning up, the term still its own
			if l := term.Lock(); !l.Valid() {
				t.Errorf("Term.Lock() %v after Lead's ctx ended, fn still running; want it valid (renewed)", l)
			}
			if other, err := rival.Campaign(t.Context()); err == nil {
				other.Resign(t.Context())
				t.Errorf("another candidate's Campaign while fn still ran after Lead's ctx ended = a term; want ErrNotAcquired")
			} else if !errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("another candidate's Campaign = %v; want ErrNotAcquired", err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("Lead() whose fn returned nil after its ctx was canceled = %v; want nil (not lost)", err)
		}
	})
}
