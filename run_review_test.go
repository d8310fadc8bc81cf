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

// A function that returns as its lock's validity runs out (no extension
// succeeded), without checking its context, held the lock to the end of
// its validity: Run and RunOnce report the loss, as the context's Err
// would have from ValidUntil on, whether or not the timer that ends the
// context has fired by then. (At that instant the timer's goroutine and
// the function's race: the loop makes the race's losing order certain to
// come up.)
func TestRunReportsAValidityThatRanOutAsFnReturned(t *testing.T) {
	for _, op := range []string{"Run", "RunOnce", "RunOnce/MinInterval"} {
		t.Run(op, func(t *testing.T) {
			for range 50 {
				synctest.Test(t, func(t *testing.T) {
					m := memory.New()
					m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errors.New("connection reset"), Times: memory.Always})
					l := mustSingle(t, m, nil)
					fn := func(ctx context.Context, l lock.Lock) error {
						time.Sleep(time.Until(l.ValidUntil)) // no extension moved it
						return nil
					}
					var err error
					switch op {
					case "Run":
						err = lock.Run(t.Context(), l, "r", time.Second, fn)
					case "RunOnce":
						err = lock.RunOnce(t.Context(), l, "r", time.Second, fn)
					default:
						err = lock.RunOnce(t.Context(), l, "r", time.Second, fn, lock.MinInterval(time.Minute))
					}
					wantIs(t, op+"() whose function returned as the validity ran out", err, lock.ErrLost)
					m.ClearFaults()
					time.Sleep(time.Second)
					noResidue(t, m)
				})
			}
		})
	}
}
