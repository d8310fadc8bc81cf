package contention_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/stores/memory"
)

// A scenario: three clients share a store that fails for a while; the
// report says what the locks kept. Store scenarios do the same with a
// locker per client over real servers, and faults from package
// faultproxy or internal/testserver.
func ExampleRun() {
	store := memory.New()
	res, err := contention.Run(context.Background(), contention.Config{
		Workers: 3,
		NewLocker: func(client int) (lock.Locker, func(), error) {
			l, err := lock.NewSingle(store, nil)
			return l, nil, err
		},
		TTL:      100 * time.Millisecond,
		Hold:     2 * time.Millisecond,
		Duration: 150 * time.Millisecond,
		Faults: []contention.Fault{{
			Name: "store down", At: 50 * time.Millisecond, For: 30 * time.Millisecond,
			Inject: func() error {
				store.Inject(memory.Fault{Err: fmt.Errorf("connection refused"), Times: memory.Always})
				return nil
			},
			Heal: func() error { store.ClearFaults(); return nil },
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := res.Report("store-down", "memory")
	fmt.Println("violations:", rep.Violations)
	fmt.Println("lost updates:", rep.LostUpdates)
	fmt.Println("unsafe:", rep.Unsafe() != "")
	fmt.Println("recovered:", rep.Recovered)
	// Output:
	// violations: 0
	// lost updates: 0
	// unsafe: false
	// recovered: true
}
