package lock_test

// Elections against their doc comments: what NewElection refuses, what
// Resign and Lead return when the release fails or ctx ends.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// NewElection refuses a retry policy that Lock would refuse, before
// anything is sent, rather than leaving every Campaign to fail with it.
func TestContractNewElectionRefusesBadRetry(t *testing.T) {
	c := newCounting("c")
	l := mustSingle(t, c, nil)
	for _, tc := range []struct {
		name string
		r    lock.Retry
	}{
		{"Attempts: -2", lock.Retry{Attempts: -2}},
		{"Attempts: 3, Delay: 0", lock.Retry{Attempts: 3}},
		{"Delay: -1s", lock.Retry{Attempts: 2, Delay: -time.Second}},
		{"MaxDelay below Delay", lock.Retry{Attempts: 2, Delay: time.Second, MaxDelay: time.Millisecond}},
	} {
		e, err := lock.NewElection(l, "role", time.Second, lock.WithRetry(tc.r))
		if !errors.Is(err, lock.ErrInvalid) || e != nil {
			t.Errorf("NewElection(WithRetry(%s)) = %v, %v; want nil, an error matching ErrInvalid", tc.name, e, err)
		}
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("%d store calls after NewElection with bad options; want none", n)
	}
	if _, err := lock.NewElection(l, "role", time.Second, lock.WithRetry(lock.NoRetry)); err != nil {
		t.Errorf("NewElection(WithRetry(NoRetry)) = %v; want nil", err)
	}
}

// Resign reports a release that failed (ErrUnavailable: the role stays
// taken until the lock expires), and later calls return the same.
func TestContractResignReportsAFailedRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
		err = term.Resign(t.Context())
		wantIs(t, "Resign() with the release failing", err, lock.ErrUnavailable)
		if errors.Is(err, lock.ErrLost) {
			t.Errorf("Resign() with the release failing = %v; want no ErrLost: the term was not lost", err)
		}
		wantIs(t, "term's cause after Resign()", context.Cause(term.Context()), lock.ErrResigned)
		m.ClearFaults()
		if again := term.Resign(t.Context()); again != err {
			t.Errorf("Resign() again = %v; want the first call's %v", again, err)
		}
	})
}

// Lead: fn's context, the term's, ends with Lead's ctx (with its cause),
// and Lead then frees the role; a release that fails is in Lead's error.
func TestContractLeadEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Minute)
		ctx, cancel := context.WithCancelCause(t.Context())
		errStop := errors.New("stopping")
		err := e.Lead(ctx, func(tctx context.Context, term *lock.Term) error {
			cancel(errStop)
			<-tctx.Done()
			if cause := context.Cause(tctx); cause != errStop {
				t.Errorf("term's cause after Lead's ctx ended = %v; want ctx's cause %v", cause, errStop)
			}
			return tctx.Err()
		})
		wantIs(t, "Lead() ended by its context", err, context.Canceled)
		if errors.Is(err, lock.ErrLost) || errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("Lead() ended by its context = %v; want fn's error only", err)
		}
		noResidue(t, m)

		m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
		err = e.Lead(t.Context(), func(context.Context, *lock.Term) error { return nil })
		wantIs(t, "Lead() with the release failing", err, lock.ErrUnavailable)
		m.ClearFaults()
	})
}

// Lead returns Campaign's error, without running fn, when the caller is
// not elected.
func TestContractLeadNotElected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		leader := mustElection(t, mustSingle(t, m, nil), "leader", time.Minute)
		term, err := leader.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		other := mustElection(t, mustSingle(t, m, nil), "leader", time.Minute, lock.WithRetry(lock.NoRetry))
		ran := false
		err = other.Lead(t.Context(), func(context.Context, *lock.Term) error { ran = true; return nil })
		wantIs(t, "Lead(NoRetry) while another leads", err, lock.ErrNotAcquired)
		if ran {
			t.Error("Lead(NoRetry) while another leads ran fn; want it not run")
		}
		wantNil(t, "Resign()", term.Resign(t.Context()))
	})
}

// Without WithRetry, Campaign waits as the locker's Lock does: a locker
// whose Options.Retry makes two attempts gives up with ErrNotAcquired,
// the default one waits until Campaign's context ends.
func TestContractCampaignWaitsAsTheLockersPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		leader := mustElection(t, mustSingle(t, m, nil), "leader", time.Minute)
		term, err := leader.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		two := mustSingle(t, m, &lock.Options{Retry: &lock.Retry{Attempts: 2, Delay: 10 * time.Millisecond}})
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		start := time.Now()
		_, err = mustElection(t, two, "leader", time.Minute).Campaign(ctx)
		wantIs(t, "Campaign() over a locker retrying twice, while another leads", err, lock.ErrNotAcquired)
		if d := time.Since(start); d >= time.Hour {
			t.Errorf("Campaign() over a locker retrying twice took %v; want it to give up before its context ends", d)
		}
		ctx, cancel = context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		_, err = mustElection(t, mustSingle(t, m, nil), "leader", time.Minute).Campaign(ctx)
		wantIs(t, "Campaign() over a default locker, while another leads", err, context.DeadlineExceeded)
		wantNil(t, "Resign()", term.Resign(t.Context()))
	})
}

// A term ends at the election's MaxHold at the latest (its context then
// ends with ErrMaxHold), and Term.ValidUntil, "the end of the term", says
// so: a leader that acts until ValidUntil does not act past MaxHold.
func TestContractTermValidUntilStopsAtMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", 3*time.Second, lock.MaxHold(10*time.Second))
		start := time.Now()
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		limit := start.Add(10 * time.Second)
		for range 9 {
			if end := term.ValidUntil(); end.After(limit) {
				t.Errorf("term.ValidUntil() at %v = %v, after MaxHold's %v", time.Since(start), end.Sub(start), limit.Sub(start))
			}
			if err := term.Context().Err(); err != nil {
				t.Fatalf("term's context at %v, before MaxHold: %v", time.Since(start), context.Cause(term.Context()))
			}
			time.Sleep(time.Second)
		}
		<-term.Context().Done()
		wantIs(t, "term's cause at MaxHold", context.Cause(term.Context()), lock.ErrMaxHold)
		if end := term.ValidUntil(); end.After(time.Now()) {
			t.Errorf("term.ValidUntil() after MaxHold = %v, in the future", end.Sub(start))
		}
		wantNil(t, "Resign()", term.Resign(t.Context()))
		noResidue(t, m)
	})
}
