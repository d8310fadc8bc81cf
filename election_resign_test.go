package lock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Resign with a nil context is refused with ErrInvalid and changes
// nothing while the term lasts; once the term is resigned, later calls
// return the first call's result whatever their context.
func TestTermResignNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
		term, err := e.Campaign(ctx)
		wantNil(t, "Campaign()", err)

		var nilCtx context.Context // nil: the bad input under test
		wantIs(t, "Resign(nil) while the term lasts", term.Resign(nilCtx), lock.ErrInvalid)
		if err := term.Context().Err(); err != nil {
			t.Fatalf("term's context after Resign(nil) = %v; want it alive", err)
		}
		if ok, err := m.Exists(ctx, "leader"); !ok || err != nil {
			t.Fatalf("Exists(leader) after Resign(nil) = %v, %v; want true, nil: the role was released", ok, err)
		}

		wantNil(t, "Resign()", term.Resign(ctx))
		if cause := context.Cause(term.Context()); cause == nil {
			t.Fatal("term's context after Resign() is alive; want it canceled")
		}
		wantNil(t, "Resign(nil) after Resign()", term.Resign(nilCtx))
		wantNil(t, "Resign() again", term.Resign(ctx))
		noResidue(t, m)
	})
}
