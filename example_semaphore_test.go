package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A semaphore limits how many jobs run at once across every process that
// shares the store: here six jobs, at most two at a time. lock.Run holds
// a permit while a job runs, extends it, and gives it back at the end.
func ExampleNewSemaphore() {
	ctx := context.Background()
	locker, err := lock.NewSingle(memory.New(), nil)
	if err != nil {
		panic(err)
	}
	sem, err := lock.NewSemaphore(locker, 2)
	if err != nil {
		panic(err)
	}

	var running, most, done atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			err := lock.Run(ctx, sem, "exports", time.Minute, func(ctx context.Context, _ lock.Lock) error {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(5 * time.Millisecond) // the job
				running.Add(-1)
				done.Add(1)
				return nil
			})
			if err != nil {
				panic(err)
			}
		})
	}
	wg.Wait()
	fmt.Println("jobs done:", done.Load())
	fmt.Println("at most 2 at once:", most.Load() <= 2)
	// Output:
	// jobs done: 6
	// at most 2 at once: true
}

// Each permit is a Lock of its own; once every permit is taken, TryLock
// reports lock.ErrNotAcquired, and Permits tells how many are held.
func ExampleSemaphore() {
	ctx := context.Background()
	locker, _ := lock.NewSingle(memory.New(), nil)
	sem, _ := lock.NewSemaphore(locker, 2)

	a, _ := sem.TryLock(ctx, "gpu", time.Minute)
	b, _ := sem.TryLock(ctx, "gpu", time.Minute)
	_, err := sem.TryLock(ctx, "gpu", time.Minute)
	fmt.Println("third:", errors.Is(err, lock.ErrNotAcquired))
	held, _ := sem.Permits(ctx, "gpu")
	fmt.Println("held:", held)

	_ = sem.Unlock(ctx, a)
	c, err := sem.TryLock(ctx, "gpu", time.Minute)
	fmt.Println("after a release:", err)
	_ = sem.Unlock(ctx, b)
	_ = sem.Unlock(ctx, c)
	// Output:
	// third: true
	// held: 2
	// after a release: <nil>
}

// A read-write lock: readers share the resource, a writer has it alone.
func ExampleNewRWLocker() {
	ctx := context.Background()
	locker, _ := lock.NewSingle(memory.New(), nil)
	rw, err := lock.NewRWLocker(locker)
	if err != nil {
		panic(err)
	}

	r1, _ := rw.Reader().TryLock(ctx, "catalog", time.Minute)
	r2, err := rw.Reader().TryLock(ctx, "catalog", time.Minute)
	fmt.Println("second reader:", err)
	_, err = rw.Writer().TryLock(ctx, "catalog", time.Minute)
	fmt.Println("writer while reading:", errors.Is(err, lock.ErrNotAcquired))

	_ = rw.Reader().Unlock(ctx, r1)
	_ = rw.Reader().Unlock(ctx, r2)
	w, err := rw.Writer().TryLock(ctx, "catalog", time.Minute)
	fmt.Println("writer once readers left:", err)
	_, err = rw.Reader().TryLock(ctx, "catalog", time.Minute)
	fmt.Println("reader while writing:", errors.Is(err, lock.ErrNotAcquired))
	_ = rw.Writer().Unlock(ctx, w)
	// Output:
	// second reader: <nil>
	// writer while reading: true
	// writer once readers left: <nil>
	// reader while writing: true
}
