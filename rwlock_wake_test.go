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
// waiting for a writer never take its intent: woken in the intent's line,
// they would not wake the others, who slept until their waits' bound,
// the TTL. Readers look again at the retry delay, and get in then.
func TestReadersWakeOnWriterRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const ttl = time.Minute
		rw, w := writerHolding(t, "r", ttl)
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

// TestWriterBehindReaderWokenAtRelease: a writer waiting for another
// writer, with a reader waiting too, gets the lock as the writer before
// it unlocks: the reader, which would not pass a wake on, is not in the
// intent's line ahead of it (the writer slept until a quarter of its TTL,
// or its retry delay, when the store woke the reader instead).
func TestWriterBehindReaderWokenAtRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const ttl = time.Minute
		rw, w := writerHolding(t, "r", ttl)
		read := make(chan error, 1)
		go func() {
			_, err := rw.Reader().Lock(ctx, "r", ttl)
			read <- err
		}()
		synctest.Wait() // the reader waits for the writer
		write := make(chan error, 1)
		var w2 lock.Lock
		go func() {
			var err error
			w2, err = rw.Writer().Lock(ctx, "r", ttl)
			write <- err
		}()
		synctest.Wait() // the second writer waits for the first, behind the reader
		start := time.Now()
		if err := rw.Writer().Unlock(ctx, w); err != nil {
			t.Fatal(err)
		}
		if err := <-write; err != nil {
			t.Fatalf("Writer().Lock = %v", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the second writer got the lock %v after the first unlocked; want at once (woken by the release)", d)
		}
		if err := rw.Writer().Unlock(ctx, w2); err != nil {
			t.Fatal(err)
		}
		if err := <-read; err != nil {
			t.Fatalf("Reader().Lock = %v", err)
		}
	})
}

// writerHolding returns a read-write lock over a fresh memory store, and
// its writer's lock on resource.
func writerHolding(t *testing.T, resource string, ttl time.Duration) (*lock.RWLocker, lock.Lock) {
	t.Helper()
	rw := mustRW(t, mustSingle(t, memory.New(), nil))
	w, err := rw.Writer().TryLock(context.Background(), resource, ttl)
	if err != nil {
		t.Fatalf("Writer().TryLock(%s) = %v", resource, err)
	}
	return rw, w
}
