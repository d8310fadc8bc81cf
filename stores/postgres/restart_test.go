package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// A server restarted (killed and started again on its data and port)
// while a store's pool lives: the pool's connections are dead, the
// prepared statements and the listening connection gone. Waiters blocked
// across the restart get an error, not a wake nor a wait until their
// context ends; each first call after it gets its answer or an error —
// never "not acquired" or "not held", which would be a guess — and a
// locker reports ErrUnavailable; and the store works again: locks
// committed before the restart are still held, statements are prepared
// again, and a new waiter is woken by a release.
func TestRestartedServer(t *testing.T) {
	srv, s, ctx := warmStore(t, false)
	if err := s.Acquire(ctx, "held", "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 2)
	for range 2 {
		go func() { waited <- s.WaitRelease(ctx, "held") }()
	}
	eventually(t, "two in line", func() bool { return s.Waiting("held") == 2 })

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := <-waited; err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WaitRelease(held) #%d across a restart = %v; want the listening connection's error", i+1, err)
		}
	}

	// The first call of each kind after the restart: the answer, or an
	// error that is neither ErrNotAcquired nor ErrNotHeld.
	guess := func(err error) bool { return errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) }
	if err := s.Acquire(ctx, "new", "b", time.Minute); guess(err) {
		t.Errorf("Acquire(new) after a restart = %v; want nil or a store error", err)
	}
	if err := s.Extend(ctx, "held", "a", time.Hour); guess(err) {
		t.Errorf("Extend(held, a) after a restart = %v; want nil or a store error", err)
	}
	if _, err := s.AcquireFenced(ctx, "fenced", "b", time.Minute); guess(err) {
		t.Errorf("AcquireFenced(fenced) after a restart = %v; want nil or a store error", err)
	}
	locker, err := lock.NewSingle(s, &lock.Options{Retry: &lock.Retry{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := locker.TryLock(ctx, "locker", time.Minute); err != nil && !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("TryLock(locker) after a restart = %v; want nil or ErrUnavailable", err)
	} else if err == nil {
		if err := locker.Unlock(ctx, l); err != nil {
			t.Errorf("Unlock(locker) = %v", err)
		}
	}

	// Back to work, within a few calls: a call failing on a connection
	// that died with the server ends that connection.
	for i := 0; ; i++ {
		err := s.Extend(ctx, "held", "a", time.Hour)
		if err == nil {
			break
		}
		if guess(err) || i == 10 {
			t.Fatalf("Extend(held, a) #%d after a restart = %v; want nil: the lock was committed before it", i+1, err)
		}
	}
	for i := range 10 {
		if err := s.Acquire(ctx, fmt.Sprintf("after%d", i), "c", time.Minute); err != nil {
			t.Fatalf("Acquire(after%d) once the store works again = %v; want nil", i, err)
		}
	}
	go func() { waited <- s.WaitRelease(ctx, "held") }()
	eventually(t, "a new waiter in line", func() bool { return s.Waiting("held") == 1 })
	if err := s.Release(ctx, "held", "a"); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Errorf("WaitRelease(held) after the restart, across Release = %v; want nil", err)
	}
}

// A waiter that comes after a restart, while the pool still holds
// connections to the killed server, listens on a live connection: LISTEN
// is sent again on another connection when the first one it was given is
// dead, rather than the waiter getting the dead connection's error.
func TestWaitAfterRestartListensOnALiveConnection(t *testing.T) {
	srv, s, ctx := warmStore(t, true)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.WaitRelease(ctx, "warm0") }()
	select {
	case err := <-waited:
		t.Fatalf("WaitRelease(warm0) after a restart = %v; want it waiting for the release", err)
	case <-waitingFor(ctx, s, "warm0"):
	}
	// The release may itself meet a dead connection first.
	for i := 0; ; i++ {
		err := s.Release(ctx, "warm0", "t")
		if err == nil {
			break
		}
		if errors.Is(err, lock.ErrNotHeld) || i == 10 {
			t.Fatalf("Release(warm0, t) #%d after a restart = %v; want nil", i+1, err)
		}
	}
	if err := <-waited; err != nil {
		t.Errorf("WaitRelease(warm0) across Release = %v; want nil", err)
	}
}

// warmStore starts a server and a store on a pool of 4 connections, and
// has every connection prepare the statements, taking warm0 to warm3
// under t at once, and releasing them again unless keep.
func warmStore(t *testing.T, keep bool) (*pgtest.Server, *postgres.Store, context.Context) {
	t.Helper()
	srv := pgtest.Start(t)
	pool := poolOf(t, srv.URL(""), func(c *pgxpool.Config) { c.MaxConns = 4 })
	s := newStore(t, pool)
	ctx := ctxFor(t, 2*time.Minute)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			r := fmt.Sprintf("warm%d", i)
			if err := s.Acquire(ctx, r, "t", time.Minute); err != nil {
				t.Error(err)
			}
			if keep {
				return
			}
			if err := s.Release(ctx, r, "t"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	return srv, s, ctx
}

// waitingFor returns a channel closed once a caller of s is in line for
// resource, having marked its lock.
func waitingFor(ctx context.Context, s interface{ Waiting(string) int }, resource string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for s.Waiting(resource) == 0 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return ch
}
