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

// A term whose end passed without a renewal (every renewal failed) is
// lost, as its context's Err reports from the term's end on: Resign and
// Lead called at that instant report ErrLost, whether or not the timer
// that cancels the context has fired by then. (At that instant the
// timer's goroutine and the leader's race: the loop makes the losing
// order certain to come up.)
func TestTermEndPassedIsLost(t *testing.T) {
	for _, op := range []string{"Resign", "Lead"} {
		t.Run(op, func(t *testing.T) {
			for range 50 {
				synctest.Test(t, func(t *testing.T) {
					m := memory.New()
					m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errors.New("connection reset"), Times: memory.Always})
					e := mustElection(t, mustSingle(t, m, nil), "leader", time.Second)
					var err error
					if op == "Resign" {
						term, cerr := e.Campaign(t.Context())
						wantNil(t, "Campaign()", cerr)
						time.Sleep(time.Until(term.ValidUntil())) // no renewal moved it
						err = term.Resign(t.Context())
					} else {
						err = e.Lead(t.Context(), func(_ context.Context, term *lock.Term) error {
							time.Sleep(time.Until(term.ValidUntil()))
							return nil
						})
					}
					wantIs(t, op+"() as the term's end passed", err, lock.ErrLost)
					m.ClearFaults()
					time.Sleep(time.Second)
					noResidue(t, m)
				})
			}
		})
	}
}
