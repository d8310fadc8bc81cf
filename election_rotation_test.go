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
