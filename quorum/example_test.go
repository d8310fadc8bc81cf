package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memory"
)

// A MultiLocker over five stores that needs four of them to grant each
// lock: it survives the loss of one store instead of two, and a lock it
// grants survives the loss of two of the stores that granted it (2×4−5−1).
func ExampleAtLeast() {
	stores := make([]lock.Store, 5)
	for i := range stores {
		stores[i] = memory.New(memory.WithName(fmt.Sprintf("store-%d", i+1)))
	}
	locker, err := lock.NewMulti(stores, &lock.Options{Quorum: quorum.AtLeast(4)})
	if err != nil {
		panic(err)
	}
	l, err := locker.TryLock(context.Background(), "orders/42", time.Minute)
	fmt.Println("locked:", err == nil, l.Resource)
	// Output:
	// locked: true orders/42
}

// A quorum that two owners could both meet is refused.
func ExampleAtLeast_refused() {
	stores := []lock.Store{memory.New(), memory.New(), memory.New(), memory.New()}
	_, err := lock.NewMulti(stores, &lock.Options{Quorum: quorum.AtLeast(2)})
	fmt.Println(errors.Is(err, lock.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// new locker: invalid argument: Options.Quorum at least 2 is met by 2 of 4 stores, so two owners could hold a lock at once: it must require more than half
}

// Majority needs more than half of the stores.
func ExampleMajority() {
	fmt.Println(quorum.Majority{}.Met(3, 5), quorum.Majority{}.Met(2, 4))
	// Output:
	// true false
}

// Unanimous needs every store: a lock it grants survives the loss of all
// stores but one, and it locks nothing while a store is down.
func ExampleUnanimous() {
	fmt.Println(quorum.Unanimous{}.Met(3, 3), quorum.Unanimous{}.Met(2, 3))
	// Output:
	// true false
}
