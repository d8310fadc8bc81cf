package lock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// TestReadersWakeOnWriterRelease: the store wakes one waiter per release
// (the memory store, as Redis, PostgreSQL and etcd do), and readers
// waiting for a writer never take its intent, whose release the others
// wait for: the readers not woken try again at the retry delay, and get
// in then, not when their waits run out at the TTL.
func TestReadersWakeOnWriterRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		single, err := lock.NewSingle(memory.New(), nil)
		if err != nil {
			t.Fatal(err)
		}
		rw, err := lock.NewRWLocker(single)
		if err != nil {
			t.Fatal(err)
		}
		const ttl = time.Minute
		w, err := rw.Writer().TryLock(ctx, "r", ttl)
		if err != nil {
			t.Fatal(err)
		}
		const readers = 3
		got := make(chan error, readers)
		for range readers {
			go func() {
				_, err := rw.Reader().Lock(ctx, "r", ttl)
				got <- err
			}()
		}
		synctest.Wait() // the readers wait for the writer's intent
		start := time.Now()
		if err := rw.Writer().Unlock(ctx, w); err != nil {
			t.Fatal(err)
		}
		for range readers {
			if err := <-got; err != nil {
				t.Fatalf("Reader().Lock = %v", err)
			}
		}
		if d := time.Since(start); d > lock.DefaultRetry.MaxDelay {
			t.Errorf("the last reader got in %v after the writer's Unlock; want within the retry delay, not at its wait's bound (the TTL)", d)
		}
	})
}
