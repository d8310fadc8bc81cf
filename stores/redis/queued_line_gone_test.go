package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// TestQueuedLineGoneAtItsDeadline: a queued acquisition whose line was
// deleted under it (FLUSHDB, a DEL by hand) finds itself out of line
// when its wait ends, with no handoff coming (the lock is another's). It
// returns ErrNotAcquired instead of waiting for a handoff until its
// context ends (forever, with context.Background()).
func TestQueuedLineGoneAtItsDeadline(t *testing.T) {
	srv := redistest.Start(t)
	holder := newStore(t, srv.NewClient(t), redis.WithPrefix("gone:"))
	waiter := newStore(t, srv.NewClient(t), redis.WithPrefix("gone:"))
	// The hang bound: far beyond the wait and any handoff's message.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := holder.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	waiters := redisstore.WaitersOf(redisstore.LockKey("gone:", "r"))
	_, err := waiter.AcquireQueued(ctx, lock.QueuedAcquisition{
		// A wait shorter than the first look again: the next thing the
		// acquisition does after getting in line is to leave it.
		Resource: "r", Token: "waiter", TTL: time.Minute, Wait: 20 * time.Millisecond,
		Queued: func() {
			if err := srv.Do("DEL", waiters).Error(); err != nil {
				t.Errorf("DEL %s: %v", waiters, err)
			}
		},
	})
	switch {
	case ctx.Err() != nil:
		t.Fatalf("AcquireQueued(r) whose line was deleted = %v after %v; want it to return at the end of its wait", err, 30*time.Second)
	case !errors.Is(err, lock.ErrNotAcquired):
		t.Errorf("AcquireQueued(r) whose line was deleted, r held by another = %v; want ErrNotAcquired", err)
	}
	if ok, err := holder.Exists(ctx, "r"); err != nil || !ok {
		t.Errorf("Exists(r) after the waiter left = %v, %v; want true: the holder still holds it", ok, err)
	}
}
