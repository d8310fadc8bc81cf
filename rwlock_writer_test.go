package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A writer waiting for a reader that stays longer than the writer's TTL
// keeps new readers out the whole time, on every setup: on a store that
// cannot extend, when it must let its intent go it takes a fresh one at
// once, rather than leave readers a retry delay to get in (a stream of
// readers then starved a writer whose TTL was short next to their stays).
func TestRWLockerWaitingWriterKeepsReadersOutPastItsTTL(t *testing.T) {
	eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
		ctx := t.Context()
		rw := mustRW(t, newLocker(t))
		r1, err := rw.Reader().TryLock(ctx, "doc", time.Minute)
		wantNil(t, "Reader().TryLock(doc)", err)
		got := make(chan error, 1)
		var w lock.Lock
		go func() {
			var err error
			w, err = rw.Writer().Lock(ctx, "doc", time.Second)
			got <- err
		}()
		time.Sleep(time.Millisecond)
		for elapsed := time.Duration(0); elapsed < 3*time.Second; elapsed += time.Millisecond {
			if r, err := rw.Reader().TryLock(ctx, "doc", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
				_ = rw.Reader().Unlock(ctx, r)
				t.Fatalf("Reader().TryLock(doc) %v after a writer with a 1s TTL began to wait = %v; want ErrNotAcquired", elapsed, err)
			}
			time.Sleep(time.Millisecond)
		}
		wantNil(t, "Reader().Unlock(r1)", rw.Reader().Unlock(ctx, r1))
		wantNil(t, "Writer().Lock(doc) once the reader left", <-got)
		wantNil(t, "Writer().Unlock(w)", rw.Writer().Unlock(ctx, w))
		noRW(t, mems, "doc")
	})
}
