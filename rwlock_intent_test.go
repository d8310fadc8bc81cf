package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A waiting writer's intent outlives its waits between attempts, so that
// no reader gets in while it waits, whatever its retry policy: with the
// default policy and a TTL shorter than its longest delay, and with a
// backoff whose longest delay is three times its TTL (its intent used to
// run out while it slept, and readers got in).
func TestRWLockerWaitingWriterIntentOutlivesItsDelay(t *testing.T) {
	for _, c := range []struct {
		name       string
		ttl        time.Duration
		opts       []lock.LockOption
		watch, gap time.Duration
	}{
		{"default retry, TTL 300ms", 300 * time.Millisecond, nil, time.Minute, 10 * time.Millisecond},
		{"backoff to 30s, TTL 10s", 10 * time.Second, []lock.LockOption{lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Second, MaxDelay: 30 * time.Second})}, 5 * time.Minute, 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachSemSetup(t, func(t *testing.T, mems []*memory.Store, newLocker func(t *testing.T) lock.Locker) {
				ctx := t.Context()
				rw := mustRW(t, newLocker(t))
				r1, err := rw.Reader().TryLock(ctx, "doc", time.Hour)
				wantNil(t, "Reader().TryLock(doc)", err)
				got := make(chan error, 1)
				var w lock.Lock
				go func() {
					var err error
					w, err = rw.Writer().Lock(ctx, "doc", c.ttl, c.opts...)
					got <- err
				}()
				time.Sleep(time.Millisecond)
				for elapsed := time.Duration(0); elapsed < c.watch; elapsed += c.gap {
					if r, err := rw.Reader().TryLock(ctx, "doc", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
						_ = rw.Reader().Unlock(ctx, r)
						t.Fatalf("Reader().TryLock(doc) %v after a writer began to wait = %v; want ErrNotAcquired", elapsed, err)
					}
					time.Sleep(c.gap)
				}
				wantNil(t, "Reader().Unlock(r1)", rw.Reader().Unlock(ctx, r1))
				wantNil(t, "Writer().Lock(doc) once the reader left", <-got)
				wantNil(t, "Writer().Unlock(w)", rw.Writer().Unlock(ctx, w))
				noRW(t, mems, "doc")
			})
		})
	}
}
