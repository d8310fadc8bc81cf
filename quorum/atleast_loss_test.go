package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memory"
)

// AtLeast(k) of n stores: a lock granted by k stores (the others failed)
// survives the loss of 2k-n-1 of them (they come back empty), not more.
// For AtLeast(4) of 5 that is two, not three as ExampleAtLeast said: with
// three of its four stores lost, another owner gathers four grants while
// the first lock is still valid.
func TestAtLeastSurvivesLossOf2kMinusNMinus1(t *testing.T) {
	for _, lost := range []int{2, 3} {
		t.Run(fmt.Sprintf("lost=%d", lost), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				stores := make([]lock.Store, 5)
				for i := range stores {
					stores[i] = memory.New(memory.WithName(fmt.Sprintf("store-%d", i+1)))
				}
				// The fifth store is unreachable to the first owner: four
				// stores grant it, the fewest AtLeast(4) takes. (Its own
				// store, failing every call, stands in for the fifth: a
				// one-shot fault on the fifth could be taken by the second
				// owner's call instead, as the first owner's background
				// re-asks and late calls go on.)
				unreachable := memory.New(memory.WithName("store-5"))
				unreachable.Inject(memory.Fault{Err: errors.New("connection reset"), Times: memory.Always})
				firstStores := append(append([]lock.Store(nil), stores[:4]...), unreachable)
				first, err := lock.NewMulti(firstStores, &lock.Options{Quorum: quorum.AtLeast(4)})
				if err != nil {
					t.Fatal(err)
				}
				held, err := first.TryLock(ctx, "orders/42", time.Minute)
				if err != nil {
					t.Fatalf("TryLock(orders/42) with 4 of 5 stores = %v; want nil", err)
				}
				// lost of the four stores that granted it come back empty.
				after := append([]lock.Store(nil), stores...)
				for i := range lost {
					after[i] = memory.New(memory.WithName(fmt.Sprintf("store-%d restarted", i+1)))
				}
				second, err := lock.NewMulti(after, &lock.Options{Quorum: quorum.AtLeast(4)})
				if err != nil {
					t.Fatal(err)
				}
				_, err = second.TryLock(ctx, "orders/42", time.Minute)
				if !held.Valid() {
					t.Fatal("the first lock is no longer valid")
				}
				switch {
				case lost < 3 && !errors.Is(err, lock.ErrNotAcquired):
					t.Errorf("TryLock(orders/42) after the loss of %d stores = %v; want ErrNotAcquired: the first lock is valid", lost, err)
				case lost >= 3 && err != nil:
					t.Errorf("TryLock(orders/42) after the loss of %d stores = %v; want nil (4 grants: the first lock does not survive)", lost, err)
				}
			})
		})
	}
}
