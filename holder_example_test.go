package lock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A locker with a holder name lets anyone ask who holds a lock, without
// seeing the token that would let them release it.
func ExampleSingleLocker_Holder() {
	ctx := context.Background()
	store := memory.New()
	worker, err := lock.NewSingle(store, &lock.Options{Holder: "worker-3 pid 4242"})
	if err != nil {
		panic(err)
	}
	l, err := worker.TryLock(ctx, "nightly-report", time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println(lock.HolderOf(l.Token))

	observer, _ := lock.NewSingle(store, nil)
	holder, held, err := observer.Holder(ctx, "nightly-report")
	fmt.Println(holder, held, err)
	// Output:
	// worker-3 pid 4242
	// worker-3 pid 4242 true <nil>
}
