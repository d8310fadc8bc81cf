package lock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Two replicas campaign for one role: the second is elected once the
// first resigns, with a higher fence.
func ExampleElection() {
	ctx := context.Background()
	store := memory.New() // one store shared by every replica
	replica := func() *lock.Election {
		locker, _ := lock.NewSingle(store, nil)
		e, _ := lock.NewElection(locker, "scheduler", 10*time.Second)
		return e
	}
	a, b := replica(), replica()

	first, err := a.Campaign(ctx)
	if err != nil {
		fmt.Println("campaign:", err)
		return
	}
	elected := make(chan *lock.Term)
	go func() {
		t, _ := b.Campaign(ctx) // waits while a leads
		elected <- t
	}()
	leader, _ := b.Leader(ctx)
	fmt.Println("someone leads:", leader.Elected)

	// The leader acts while its term's context is live, passing the
	// term's fence to what it writes to.
	if first.Context().Err() == nil {
		fmt.Println("a acts as leader")
	}
	_ = first.Resign(ctx)
	fmt.Println("a's term:", context.Cause(first.Context()))

	second := <-elected
	fmt.Println("b leads with a higher fence:", second.Fence() > first.Fence())
	_ = second.Resign(ctx)
	// Output:
	// someone leads: true
	// a acts as leader
	// a's term: lock: resigned: "scheduler"
	// b leads with a higher fence: true
}

// Lead campaigns, runs the leader's work for one term, and resigns. A
// replica loops on it to campaign again after its term ends.
func ExampleElection_Lead() {
	ctx := context.Background()
	locker, _ := lock.NewSingle(memory.New(), nil)
	e, _ := lock.NewElection(locker, "compactor", 10*time.Second)

	err := e.Lead(ctx, func(ctx context.Context, t *lock.Term) error {
		for batch := range 3 {
			if ctx.Err() != nil {
				return context.Cause(ctx) // the term ended: stop at once
			}
			fmt.Println("compacting batch", batch, "as leader")
		}
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// compacting batch 0 as leader
	// compacting batch 1 as leader
	// compacting batch 2 as leader
	// err: <nil>
}
