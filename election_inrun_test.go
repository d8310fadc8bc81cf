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

// Lead within a Run whose lock is lost: the term's context ends with
// Run's (with its cause), but the term itself was not lost: Lead and
// Resign report the term's own end only.
func TestLeadInsideALostRunIsNotALostTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		l := mustSingle(t, m, nil)
		e := mustElection(t, l, "leader", time.Second)
		var lead, resign error
		run := lock.Run(t.Context(), l, "job", time.Second, func(ctx context.Context, _ lock.Lock) error {
			lead = e.Lead(ctx, func(tctx context.Context, term *lock.Term) error {
				m.Expire("job")
				<-tctx.Done()
				if !errors.Is(context.Cause(tctx), lock.ErrLost) {
					t.Errorf("term context cause = %v; want Run's loss (it ends with ctx)", context.Cause(tctx))
				}
				resign = term.Resign(t.Context())
				return nil
			})
			return nil
		})
		wantIs(t, "Run() whose lock was lost", run, lock.ErrLost)
		wantNil(t, "Term.Resign() of a term that was not lost", resign)
		wantNil(t, "Lead() within a lost Run, its own term not lost", lead)
		noResidue(t, m)
	})
}

// A term lost after Lead's context was canceled (fn ignores it) is
// reported lost: ErrLost, and the release finding the role not held is
// no further error.
func TestLeadTermLostAfterCancellationIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		err := e.Lead(ctx, func(tctx context.Context, term *lock.Term) error {
			cancel()
			<-tctx.Done()
			m.Expire("leader")
			time.Sleep(2 * time.Second) // a renewal finds the role taken
			return nil
		})
		wantIs(t, "Lead() whose term was lost after ctx was canceled", err, lock.ErrLost)
		if bbHasOp(err, "unlock") || errors.Is(err, lock.ErrNotHeld) && !errors.Is(err, lock.ErrLost) {
			t.Errorf("Lead() = %v; the release finding a lost term's lock not held is no further error", err)
		}
	})
}

// A term whose MaxHold passes over a store that cannot extend leaves its
// lock to run out: no EventLost for it.
func TestElectionMaxHoldWithoutExtenderIsNoLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &bbRecorder{}
		m := memory.New()
		e := mustElection(t, mustSingle(t, basic{m}, &lock.Options{Hook: rec}), "leader", 3*time.Second, lock.MaxHold(time.Second))
		term, err := e.Campaign(t.Context())
		wantNil(t, "Campaign()", err)
		<-term.Context().Done()
		wantIs(t, "term's cause", context.Cause(term.Context()), lock.ErrMaxHold)
		time.Sleep(5 * time.Second)
		if lost := rec.ofKind(lock.EventLost); len(lost) != 0 {
			t.Errorf("EventLost %v for a term that MaxHold ended; want none", lost[0].Err)
		}
		wantNil(t, "Resign() after MaxHold and the lock's expiry", term.Resign(t.Context()))
	})
}
