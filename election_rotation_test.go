package lock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// MaxHold rotates leaders: two campaigners leading in turn by a loop of
// Lead each, with terms ended by MaxHold, take turns. Without a head
// start for the others, the former leader's next Campaign, sent as soon
// as it resigned, beat the campaigner that hears of the release from the
// store and then asks: the same leader led again and again.
func TestMaxHoldRotatesLeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		const terms = 12
		for i := range 2 {
			e := mustElection(t, mustSingle(t, store, nil), "role", 10*time.Second, lock.MaxHold(time.Second))
			wg.Go(func() {
				for ctx.Err() == nil {
					_ = e.Lead(ctx, func(tctx context.Context, _ *lock.Term) error {
						mu.Lock()
						order = append(order, i)
						if len(order) == terms {
							cancel()
						}
						mu.Unlock()
						<-tctx.Done()
						return nil
					})
				}
			})
		}
		wg.Wait()
		for j := 1; j < len(order); j++ {
			if order[j] == order[j-1] {
				t.Errorf("terms led by %v: term %d went to the leader of term %d again, the other campaigning all along; want leaders to take turns", order, j+1, j)
				break
			}
		}
	})
}

// A Campaign waiting out the head start after a term that MaxHold ended
// returns ErrClosed once its locker is shut down, as Lock would, before
// the head start has passed; so does one that begins after the Shutdown.
func TestCampaignHeadStartEndsAtShutdown(t *testing.T) {
	for _, already := range []bool{false, true} {
		name := "shut while waiting"
		if already {
			name = "shut before"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				m := memory.New()
				l := mustSingle(t, m, &lock.Options{StoreTimeout: 2 * time.Second})
				e := mustElection(t, l, "role", time.Minute, lock.MaxHold(300*time.Millisecond))
				term, err := e.Campaign(ctx)
				wantNil(t, "Campaign()", err)
				<-term.Context().Done() // MaxHold ended the term
				m.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Second})
				wantNil(t, "Resign()", term.Resign(ctx)) // a second: a head start of four
				start := time.Now()
				done := make(chan error, 1)
				if already {
					wantNil(t, "Shutdown()", l.Shutdown(ctx))
					_, err := e.Campaign(ctx)
					done <- err
				} else {
					go func() { _, err := e.Campaign(ctx); done <- err }()
					synctest.Wait()
					wantNil(t, "Shutdown()", l.Shutdown(ctx))
				}
				err = <-done
				wantIs(t, "Campaign() with its locker shut down", err, lock.ErrClosed)
				if took := time.Since(start); took > 0 {
					t.Errorf("Campaign() = %v %v after it began, its locker shut down; want it at once, not after the head start", err, took)
				}
			})
		})
	}
}
