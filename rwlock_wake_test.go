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
// wait for: each woken reader passes the wake on, so that all get in when
// the writer unlocks, not when their waits run out at the TTL.
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
		if d := time.Since(start); d >= ttl/2 {
			t.Errorf("the last reader got in %v after the writer's Unlock; want at once, not at its wait's bound (the TTL)", d)
		}
	})
}
