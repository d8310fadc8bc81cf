package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// TestQueuedServerGoes: a queued acquisition waiting in line learns at
// once that its server died or restarted (its subscription broke, and the
// line with it): an error that is no lock outcome, long before its wait
// or its context would end. The client retries as rueidis does by default.
func TestQueuedServerGoes(t *testing.T) {
	for name, stop := range map[string]func(*redistest.Server) error{
		"killed":    func(srv *redistest.Server) error { srv.Kill(); return nil },
		"restarted": (*redistest.Server).Restart,
	} {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			holder := newStore(t, srv.NewClient(t), redis.WithPrefix("goes:"))
			waiter := newStore(t, srv.NewClient(t), redis.WithPrefix("goes:"))
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if err := holder.Acquire(ctx, "r", "holder", time.Minute); err != nil {
				t.Fatal(err)
			}
			inLine := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, err := waiter.AcquireQueued(ctx, lock.QueuedAcquisition{
					Resource: "r", Token: "waiter", TTL: time.Minute, Wait: time.Minute,
					Queued: func() { close(inLine) },
				})
				done <- err
			}()
			select {
			case <-inLine:
			case err := <-done:
				t.Fatalf("AcquireQueued(r) of a held lock = %v before getting in line", err)
			}
			if err := stop(srv); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) || ctx.Err() != nil {
					t.Errorf("AcquireQueued(r) when its server was %s = %v; want the subscription's error, no lock outcome", name, err)
				}
			case <-ctx.Done():
				t.Fatalf("AcquireQueued(r) still waiting in line after its server was %s", name)
			}
		})
	}
}
