package lock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Take a lock, do the work, release it.
func Example() {
	ctx := context.Background()
	locker, err := lock.NewSingle(memory.New(), nil)
	if err != nil {
		panic(err)
	}

	l, err := locker.Lock(ctx, "invoice/42", 10*time.Second)
	if err != nil {
		fmt.Println("could not lock:", err)
		return
	}
	fmt.Println("locked", l.Resource, "valid:", l.Valid())

	if err := locker.Unlock(ctx, l); err != nil {
		fmt.Println("unlock:", err)
	}
	fmt.Println("unlocked")
	// Output:
	// locked invoice/42 valid: true
	// unlocked
}

// TryLock makes a single attempt and reports contention as ErrNotAcquired.
func ExampleSingleLocker_TryLock() {
	ctx := context.Background()
	store := memory.New()
	first, _ := lock.NewSingle(store, nil)
	second, _ := lock.NewSingle(store, nil)

	held, _ := first.TryLock(ctx, "report", time.Minute)
	_, err := second.TryLock(ctx, "report", time.Minute)
	fmt.Println(errors.Is(err, lock.ErrNotAcquired))
	fmt.Println(err)

	_ = first.Unlock(ctx, held)
	_, err = second.TryLock(ctx, "report", time.Minute)
	fmt.Println(err)
	// Output:
	// true
	// trylock "report": not acquired: held by another owner
	// <nil>
}

// Retry a few times, with jitter, before giving up; or wait until the
// context ends (the default).
func ExampleWithRetry() {
	ctx := context.Background()
	store := memory.New()
	holder, _ := lock.NewSingle(store, nil)
	waiter, _ := lock.NewSingle(store, nil)

	held, _ := holder.TryLock(ctx, "nightly-backup", time.Minute)
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = holder.Unlock(ctx, held)
	}()

	// Up to 50 attempts. The memory store tells of releases, so between
	// attempts the waiter waits for one, up to the TTL asked for (a
	// minute): it wakes as soon as the holder releases. On a store that
	// cannot tell, it would sleep a delay drawn from [5ms, 10ms].
	l, err := waiter.Lock(ctx, "nightly-backup", time.Minute,
		lock.WithRetry(lock.Retry{Attempts: 50, Delay: 10 * time.Millisecond}))
	fmt.Println(l.Resource, err)

	// Without retries, Lock gives up at once; with a deadline and the
	// default policy, it gives up when the context ends, and says so.
	ctx2, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = holder.Lock(ctx2, "nightly-backup", time.Minute)
	fmt.Println(errors.Is(err, context.DeadlineExceeded), errors.Is(err, lock.ErrNotAcquired))
	// Output:
	// nightly-backup <nil>
	// true false
}

// Run keeps the lock extended while the function runs and releases it
// afterwards; if the lock is lost, the function's context is canceled.
func ExampleRun() {
	ctx := context.Background()
	locker, _ := lock.NewSingle(memory.New(), nil)

	err := lock.Run(ctx, locker, "migrate-db", 300*time.Millisecond, func(ctx context.Context, l lock.Lock) error {
		// Work longer than the TTL: the lock is extended every 100ms.
		select {
		case <-time.After(time.Second):
			fmt.Println("migrated under lock", l.Resource)
			return nil
		case <-ctx.Done():
			return context.Cause(ctx) // lock.ErrLost if the lock could not be kept
		}
	})
	fmt.Println("err:", err)
	locked, _ := locker.IsLocked(ctx, "migrate-db")
	fmt.Println("still locked:", locked)
	// Output:
	// migrated under lock migrate-db
	// err: <nil>
	// still locked: false
}

// A fence protects the resource from a holder whose lock expired while it
// was paused: the next holder's fence is higher, so the stale write is
// refused.
func ExampleLock_fence() {
	ctx := context.Background()
	store := memory.New()
	locker, _ := lock.NewSingle(store, nil)
	var guard lock.FenceGuard // the resource's side: here, an in-process ledger
	var balance string
	write := func(l lock.Lock, what string) error {
		return guard.Do("ledger", l.Fence, func() error { balance = what; return nil })
	}

	slow, _ := locker.Lock(ctx, "ledger", time.Minute)
	store.Expire("ledger") // the slow holder is paused past its TTL...

	fast, _ := locker.Lock(ctx, "ledger", time.Minute)
	fmt.Println("fences increase:", fast.Fence > slow.Fence)
	fmt.Println(write(fast, "new balance"))
	err := write(slow, "old balance") // ...and wakes up to write
	fmt.Println(errors.Is(err, lock.ErrStaleFence), err)
	fmt.Println("balance:", balance)
	// Output:
	// fences increase: true
	// <nil>
	// true lock: stale fence: fence 1 for "ledger", which a holder with fence 2 wrote since
	// balance: new balance
}

// Redlock locks carry fences too, when every store can raise them: each
// lock's fence is above that of every earlier lock, whichever majority of
// the stores granted each. FenceGuard refuses the write of the holder
// whose lock was lost.
func ExampleFenceGuard() {
	ctx := context.Background()
	var stores []lock.Store
	var mems []*memory.Store
	for i := range 3 {
		m := memory.New(memory.WithName(fmt.Sprintf("node%d", i)))
		mems, stores = append(mems, m), append(stores, m)
	}
	locker, _ := lock.NewMulti(stores, nil)
	var guard lock.FenceGuard

	first, _ := locker.Lock(ctx, "report", time.Minute)
	for _, m := range mems {
		m.Expire("report") // the first holder is paused past its TTL
	}
	second, _ := locker.Lock(ctx, "report", time.Minute)
	fmt.Println(guard.Do("report", second.Fence, func() error { return nil }))
	err := guard.Do("report", first.Fence, func() error { return nil })
	fmt.Println(second.Fence > first.Fence, errors.Is(err, lock.ErrStaleFence))
	// Output:
	// <nil>
	// true true
}

// A resource in a database makes the fence check in the same statement as
// the write: the row keeps the fence of its last writer, and a write
// carrying a lower fence matches no row. (It needs a database to run: db
// stands for one opened with database/sql.)
func Example_fencedSQL() {
	var db *sql.DB // sql.Open("pgx", dsn), say
	ctx := context.Background()
	locker, _ := lock.NewSingle(memory.New(), nil)

	err := lock.Run(ctx, locker, "account/42", 30*time.Second, func(ctx context.Context, l lock.Lock) error {
		res, err := db.ExecContext(ctx,
			`UPDATE accounts SET balance = balance - $1, fence = $2 WHERE id = $3 AND fence <= $2`,
			100, l.Fence, 42)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("account 42: %w (or no such account)", lock.ErrStaleFence)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
}

// Redlock: the lock is held when a majority of independent stores granted
// it, so it survives the loss of a minority of them.
func ExampleNewMulti() {
	ctx := context.Background()
	var stores []lock.Store
	var mems []*memory.Store
	for i := range 5 {
		m := memory.New(memory.WithName(fmt.Sprintf("node%d", i)))
		mems = append(mems, m)
		stores = append(stores, m)
	}
	locker, err := lock.NewMulti(stores, nil) // majority quorum: 3 of 5
	if err != nil {
		panic(err)
	}

	// Two nodes are down: the lock is still granted by the other three.
	down := errors.New("connection refused")
	mems[1].Inject(memory.Fault{Err: down, Times: memory.Always})
	mems[3].Inject(memory.Fault{Err: down, Times: memory.Always})
	l, err := locker.TryLock(ctx, "payments", 10*time.Second)
	fmt.Println("with 2 of 5 down:", err)

	// A third one goes down: no quorum, and the error says which and why.
	mems[4].Inject(memory.Fault{Err: down, Times: memory.Always})
	_, err = locker.TryLock(ctx, "refunds", 10*time.Second)
	fmt.Println("with 3 of 5 down:", errors.Is(err, lock.ErrUnavailable))
	fmt.Println(err)

	// The nodes come back; the lock is released on every one of them.
	for _, m := range mems {
		m.ClearFaults()
	}
	fmt.Println(locker.Unlock(ctx, l))
	// Output:
	// with 2 of 5 down: <nil>
	// with 3 of 5 down: true
	// trylock "refunds": stores unavailable: 3 of 5 stores failed; quorum majority not met [node1: connection refused; node3: connection refused; node4: connection refused]
	// <nil>
}
