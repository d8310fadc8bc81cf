package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// The memory store as the fake behind code that takes locks: the same
// Locker the service uses in production, over a store that lives in the
// test.
func Example() {
	ctx := context.Background()
	store := memory.New()
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		panic(err)
	}

	l, err := locker.TryLock(ctx, "orders/42", time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println("held:", store.Resources())

	if err := locker.Unlock(ctx, l); err != nil {
		panic(err)
	}
	fmt.Println("held after unlock:", store.Resources())
	// Output:
	// held: [orders/42]
	// held after unlock: []
}

// Expire simulates a lock lost while its holder still works (a holder that
// stalled past its TTL): the holder learns it at its next Extend or Unlock.
func ExampleStore_Expire() {
	ctx := context.Background()
	store := memory.New()
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		panic(err)
	}
	l, err := locker.TryLock(ctx, "orders/42", time.Minute)
	if err != nil {
		panic(err)
	}

	store.Expire("orders/42")

	_, err = locker.Extend(ctx, l, time.Minute)
	fmt.Println("extend reports the loss:", errors.Is(err, lock.ErrNotHeld))
	// Output:
	// extend reports the loss: true
}

// Inject makes the store fail, so a test can check how its code handles an
// unreachable lock store. Here the reply to an acquisition is lost after the
// store took the lock: the locker reports an error — never "held by
// another" — and releases what the store may hold.
func ExampleStore_Inject() {
	ctx := context.Background()
	store := memory.New()
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		panic(err)
	}

	store.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errors.New("connection reset"), AfterApply: true})

	_, err = locker.TryLock(ctx, "orders/42", time.Minute)
	fmt.Println("unavailable:", errors.Is(err, lock.ErrUnavailable))
	fmt.Println("contention:", errors.Is(err, lock.ErrNotAcquired))
	fmt.Println("left locked:", store.Resources())
	// Output:
	// unavailable: true
	// contention: false
	// left locked: []
}
