package redis_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// inLineHook closes in when its Lock gets in the store's line (the retry
// that waits in line).
type inLineHook struct {
	once sync.Once
	in   chan struct{}
}

func (h *inLineHook) Observe(_ context.Context, e lock.Event) {
	if e.Kind == lock.EventRetry && e.Waiting {
		h.once.Do(func() { close(h.in) })
	}
}

// TestForeverLockKeepsItsPlacePastItsTTL: a Lock that retries Forever (the
// default policy) stays in the store's line while the lock is held for
// many times its own TTL, and is served before a Lock that asked later.
// Its wait in line used to end at its TTL, and it then got in line again
// at the end, behind everyone who had asked meanwhile: while a line held
// more than a TTL's worth of holds, its first waiters were served last,
// or never. The lock is held for five times the first waiter's TTL, in
// real time: the store's own timers decide when a wait ends.
func TestForeverLockKeepsItsPlacePastItsTTL(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // the hang bound
	defer cancel()
	locker := func(h lock.Hook) *lock.SingleLocker {
		l, err := lock.NewSingle(newStore(t, srv.NewClient(t), redis.WithPrefix("place:")), &lock.Options{Hook: h})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	holder := locker(nil)
	held, err := holder.TryLock(ctx, "r", time.Minute)
	if err != nil {
		t.Fatalf("holder TryLock(r) = %v", err)
	}
	const firstTTL = 200 * time.Millisecond
	served := make(chan string, 2)
	var wg sync.WaitGroup
	defer wg.Wait()
	take := func(name string, ttl time.Duration) *inLineHook {
		h := &inLineHook{in: make(chan struct{})}
		l := locker(h)
		wg.Go(func() {
			got, err := l.Lock(ctx, "r", ttl)
			if err != nil {
				t.Errorf("%s Lock(r) = %v", name, err)
				served <- ""
				return
			}
			served <- name
			if err := l.Unlock(ctx, got); err != nil {
				t.Errorf("%s Unlock(r) = %v", name, err)
			}
		})
		return h
	}
	inLine := func(name string, h *inLineHook) {
		select {
		case <-h.in:
		case <-ctx.Done():
			t.Fatalf("%s Lock(r) of a held lock did not get in line", name)
		}
	}
	inLine("first", take("first", firstTTL))
	inLine("later", take("later", time.Minute))
	time.Sleep(5 * firstTTL)
	if err := holder.Unlock(ctx, held); err != nil {
		t.Fatalf("holder Unlock(r) = %v", err)
	}
	if got := <-served; got != "first" {
		t.Errorf("after a hold of 5 times its TTL, the lock went to %q first; want the first in line (TTL %v) before the one who asked later", got, firstTTL)
	}
	<-served
}
