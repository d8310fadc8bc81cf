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

func mustElection(t *testing.T, l lock.Locker, role string, ttl time.Duration, opts ...lock.LockOption) *lock.Election {
	t.Helper()
	e, err := lock.NewElection(l, role, ttl, opts...)
	if err != nil {
		t.Fatalf("NewElection(%q, %v) = %v", role, ttl, err)
	}
	return e
}

func TestElectionOneLeaderAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		a := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		b := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		ctx := t.Context()

		first, err := a.Campaign(ctx)
		wantNil(t, "a.Campaign()", err)
		elected := make(chan *lock.Term)
		go func() {
			term, err := b.Campaign(ctx)
			if err != nil {
				t.Errorf("b.Campaign() = %v", err)
			}
			elected <- term
		}()
		time.Sleep(5 * time.Second) // five TTLs: a renews its term
		synctest.Wait()
		select {
		case <-elected:
			t.Fatal("b was elected while a led")
		default:
		}
		if err := first.Context().Err(); err != nil {
			t.Fatalf("a's term ended while renewed: %v", context.Cause(first.Context()))
		}

		wantNil(t, "a's Resign()", first.Resign(ctx))
		if cause := context.Cause(first.Context()); !errors.Is(cause, lock.ErrResigned) {
			t.Errorf("a's term cause after Resign = %v; want ErrResigned", cause)
		}
		second := <-elected
		if second.Fence() <= first.Fence() {
			t.Errorf("fences: b's term %d after a's %d; want strictly greater", second.Fence(), first.Fence())
		}
		wantNil(t, "b's Resign()", second.Resign(ctx))
		wantNil(t, "b's second Resign()", second.Resign(ctx))
		noResidue(t, m)
	})
}

// A leader whose renewals stall sees its term's context end strictly
// before its lock's validity, and nobody is elected before that validity
// ends.
func TestElectionTermEndsBeforeTheLocksValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		const ttl = time.Second
		a := mustElection(t, mustSingle(t, m, nil), "leader", ttl)
		b := mustElection(t, mustSingle(t, m, nil), "leader", ttl)
		ctx := t.Context()
		term, err := a.Campaign(ctx)
		wantNil(t, "a.Campaign()", err)
		lockEnd := term.Lock().ValidUntil
		termEnd := term.ValidUntil()
		if !termEnd.Before(lockEnd) {
			t.Fatalf("term ends at %v, lock's validity at %v; want the term first", termEnd, lockEnd)
		}
		// Every renewal stalls from now on, and answers after the TTL.
		m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: time.Hour, Times: memory.Always})

		electedAt := make(chan time.Time, 1)
		go func() {
			rival, err := b.Campaign(ctx)
			if err != nil {
				t.Errorf("b.Campaign() = %v", err)
				close(electedAt)
				return
			}
			electedAt <- time.Now()
			_ = rival.Resign(ctx)
		}()
		<-term.Context().Done()
		endedAt := time.Now()
		if !endedAt.Before(lockEnd) {
			t.Errorf("term's context ended at %v; want strictly before the lock's validity %v", endedAt, lockEnd)
		}
		if !endedAt.Equal(termEnd) {
			t.Errorf("term's context ended at %v; want at its ValidUntil %v", endedAt, termEnd)
		}
		cause := context.Cause(term.Context())
		if !errors.Is(cause, lock.ErrLost) {
			t.Errorf("term's cause = %v; want ErrLost", cause)
		}
		at := <-electedAt
		if !at.After(lockEnd) {
			t.Errorf("b elected at %v; want after a's lock's validity %v", at, lockEnd)
		}
		m.ClearFaults()
		if err := term.Resign(ctx); !errors.Is(err, lock.ErrLost) {
			t.Errorf("Resign() after the loss = %v; want ErrLost", err)
		}
	})
}

func TestElectionTermErrReportsTheEndWithoutWaitingForDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: time.Hour, Times: memory.Always})
		// Sleep to the term's end without letting the keeper's timer run.
		time.Sleep(time.Until(term.ValidUntil()))
		if err := term.Context().Err(); err == nil {
			t.Error("term's context Err() = nil at the term's end; want the loss")
		}
		m.ClearFaults()
		wantIs(t, "Resign()", term.Resign(t.Context()), lock.ErrLost)
	})
}

func TestElectionCampaignContextBoundsTheCampaignOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		term, err := e.Campaign(ctx)
		wantNil(t, "Campaign()", err)
		cancel()
		time.Sleep(3 * time.Second)
		if err := term.Context().Err(); err != nil {
			t.Fatalf("term ended with Campaign's context: %v", context.Cause(term.Context()))
		}
		wantNil(t, "Resign()", term.Resign(t.Context()))
		noResidue(t, m)

		// A campaign that cannot win ends with its context.
		held := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		leader, err := held.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		ctx, cancel = context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = e.Campaign(ctx)
		wantIs(t, "Campaign() while another leads", err, context.DeadlineExceeded)
		one := mustElection(t, mustSingle(t, m, nil), "leader", time.Second, lock.WithRetry(lock.NoRetry))
		_, err = one.Campaign(t.Context())
		wantIs(t, "Campaign(NoRetry) while another leads", err, lock.ErrNotAcquired)
		wantNil(t, "Resign()", leader.Resign(t.Context()))
	})
}

func TestElectionLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		var fence uint64
		err := e.Lead(t.Context(), func(ctx context.Context, term *lock.Term) error {
			fence = term.Fence()
			if l, _ := e.Leader(ctx); !l.Elected {
				t.Error("Leader() while leading: not elected")
			}
			time.Sleep(3 * time.Second)
			return ctx.Err()
		})
		wantNil(t, "Lead()", err)
		if fence == 0 {
			t.Error("term's fence = 0 on the memory store; want a fence")
		}
		noResidue(t, m)

		// The term ends with Lead's context.
		ctx, cancel := context.WithCancelCause(t.Context())
		stop := errors.New("shutting down")
		err = e.Lead(ctx, func(ctx context.Context, _ *lock.Term) error {
			cancel(stop)
			<-ctx.Done()
			return context.Cause(ctx)
		})
		wantIs(t, "Lead() whose context ends", err, stop)
		noResidue(t, m)

		// A lost term: fn returns the loss, Lead reports it once.
		err = e.Lead(t.Context(), func(ctx context.Context, term *lock.Term) error {
			m.Expire("leader")
			<-ctx.Done()
			return context.Cause(ctx)
		})
		wantIs(t, "Lead() whose term was lost", err, lock.ErrLost)
		wantIs(t, "Lead() whose term was lost", err, lock.ErrNotHeld)
	})
}

func TestElectionMaxHoldEndsTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second, lock.MaxHold(2*time.Second))
		start := time.Now()
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		<-term.Context().Done()
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("term ended after %v; want MaxHold, 2s", d)
		}
		wantIs(t, "term's cause", context.Cause(term.Context()), lock.ErrMaxHold)
		wantNil(t, "Resign()", term.Resign(t.Context()))
		noResidue(t, m)
	})
}

// holderLocker is a Locker with a Holder method, as the lockers have
// over stores that keep the holder.
type holderLocker struct {
	lock.Locker
	holder string
	err    error
}

func (h holderLocker) Holder(ctx context.Context, resource string) (string, bool, error) {
	if h.err != nil {
		return "", false, h.err
	}
	held, err := h.IsLocked(ctx, resource)
	if !held {
		return "", false, err
	}
	return h.holder, true, err
}

func TestElectionLeader(t *testing.T) {
	ctx := t.Context()
	m := memory.New()
	plain := mustSingle(t, m, nil)
	for _, tc := range []struct {
		name   string
		locker lock.Locker
		holder string
	}{
		{"no Holder method", plain, ""},
		{"Holder method", holderLocker{Locker: plain, holder: "host-1:42"}, "host-1:42"},
		{"Holder unsupported", holderLocker{Locker: plain, err: errors.ErrUnsupported}, ""},
	} {
		e := mustElection(t, tc.locker, "leader", time.Minute)
		got, err := e.Leader(ctx)
		wantNil(t, tc.name+": Leader()", err)
		if got != (lock.Leader{}) {
			t.Errorf("%s: Leader() with nobody elected = %+v; want zero", tc.name, got)
		}
		term, err := e.Campaign(ctx)
		wantNil(t, tc.name+": Campaign()", err)
		got, err = e.Leader(ctx)
		wantNil(t, tc.name+": Leader()", err)
		if want := (lock.Leader{Elected: true, Holder: tc.holder}); got != want {
			t.Errorf("%s: Leader() = %+v; want %+v", tc.name, got, want)
		}
		wantNil(t, tc.name+": Resign()", term.Resign(ctx))
	}
	failing := holderLocker{Locker: plain, err: lock.ErrUnavailable}
	_, err := mustElection(t, failing, "leader", time.Minute).Leader(ctx)
	wantIs(t, "Leader() when Holder fails", err, lock.ErrUnavailable)
}

func TestNewElectionRefusesBadInput(t *testing.T) {
	l := mustSingle(t, memory.New(), nil)
	for _, tc := range []struct {
		name   string
		locker lock.Locker
		role   string
		ttl    time.Duration
		opts   []lock.LockOption
	}{
		{"nil locker", nil, "r", time.Second, nil},
		{"nil *SingleLocker", (*lock.SingleLocker)(nil), "r", time.Second, nil},
		{"empty role", l, "", time.Second, nil},
		{"zero ttl", l, "r", 0, nil},
		{"ttl above MaxTTL", l, "r", lock.MaxTTL + time.Hour, nil},
		{"ttl without validity", l, "r", 2 * time.Millisecond, nil},
		{"negative MaxHold", l, "r", time.Second, []lock.LockOption{lock.MaxHold(-1)}},
		{"ExtendEvery past the term", l, "r", time.Second, []lock.LockOption{lock.ExtendEvery(950 * time.Millisecond)}},
	} {
		if _, err := lock.NewElection(tc.locker, tc.role, tc.ttl, tc.opts...); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewElection(%s) = %v; want ErrInvalid", tc.name, err)
		}
	}
	e := mustElection(t, l, "r", time.Second)
	var nilCtx context.Context
	if _, err := e.Campaign(nilCtx); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Campaign(nil) = %v; want ErrInvalid", err)
	}
	if err := e.Lead(t.Context(), nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Lead(nil function) = %v; want ErrInvalid", err)
	}
}

// Once a term has ended, its renewals stop: a term nobody resigns does
// not keep calling a failing store.
func TestElectionNoRenewalAfterTheTermEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCounting("c")
		e := mustElection(t, mustSingle(t, c, nil), "leader", time.Second)
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		c.Inject(memory.Fault{Ops: memory.OpExtend, Err: errConnReset, Times: memory.Always})
		<-term.Context().Done()
		synctest.Wait()
		calls := c.calls.Load()
		time.Sleep(10 * time.Second)
		if n := c.calls.Load() - calls; n != 0 {
			t.Errorf("%d store calls in the 10s after the term ended; want none", n)
		}
		c.ClearFaults()
		wantIs(t, "Resign()", term.Resign(t.Context()), lock.ErrLost)
	})
}
