package redissuite

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

const guardTTL = time.Second

// recovering asserts that err is the guard's refusal.
func recovering(t *testing.T, call string, err error) {
	t.Helper()
	if !errors.Is(err, redisstore.ErrRecovering) || !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("%s = %v; want ErrRecovering (lock.ErrUnavailable, not ErrNotAcquired)", call, err)
	}
}

// warm waits until a guarded store grants r, and releases it.
func warm(t *testing.T, ctx context.Context, s Store, r string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Acquire(ctx, r, "warm", guardTTL)
		if err == nil {
			if err := s.Release(ctx, r, "warm"); err != nil {
				t.Fatal(err)
			}
			return
		}
		// Recovering, or a connection a restart broke.
		if errors.Is(err, lock.ErrNotAcquired) || time.Now().After(deadline) {
			t.Fatalf("Acquire on a warming server = %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A guarded server grants nothing for maxTTL after it was first seen, and
// again after every restart that lost its data — but not after one that
// kept it.
func (f Factory) testRestartGuard(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithRestartGuard(guardTTL))
	ctx := ctxFor(t, 30*time.Second)

	start := time.Now()
	recovering(t, "Acquire on a fresh server", s.Acquire(ctx, "r", "a", guardTTL))
	_, err := s.AcquireFenced(ctx, "r", "a", guardTTL)
	recovering(t, "AcquireFenced on a fresh server", err)
	warm(t, ctx, s, "r")
	if waited := time.Since(start); waited < guardTTL {
		t.Fatalf("the guard let a fresh server grant a lock after %v; want at least %v", waited, guardTTL)
	}
	if fence, err := s.AcquireFenced(ctx, "r", "a", guardTTL); err != nil || fence == 0 {
		t.Fatalf("AcquireFenced once recovered = %d, %v; want a fence", fence, err)
	}
	if err := s.Acquire(ctx, "r", "b", guardTTL); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire of a held lock once recovered = %v; want ErrNotAcquired", err)
	}

	// A restart that keeps the data keeps the marker and the lock.
	if err := srv.RestartPersisted(); err != nil {
		t.Fatal(err)
	}
	if err := reconnected(func() error { return s.Acquire(ctx, "r", "b", guardTTL) }); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire of the held lock after a persisted restart = %v; want ErrNotAcquired", err)
	}
	if err := reconnected(func() error { return s.Release(ctx, "r", "a") }); err != nil {
		t.Fatalf("Release after a persisted restart = %v", err)
	}
	if err := reconnected(func() error { return s.Acquire(ctx, "other", "b", guardTTL) }); err != nil {
		t.Fatalf("Acquire after a persisted restart = %v; want nil (no data was lost)", err)
	}

	// A restart without persistence forgets the lock: the guard refuses.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	recovering(t, "Acquire after an empty restart", reconnected(func() error { return s.Acquire(ctx, "other", "c", guardTTL) }))
	warm(t, ctx, s, "other")
	if waited := time.Since(restarted); waited < guardTTL {
		t.Fatalf("the guard let a restarted server grant a lock after %v; want at least %v", waited, guardTTL)
	}

	// So does a flush.
	if err := srv.Do("FLUSHALL").Error(); err != nil {
		t.Fatal(err)
	}
	recovering(t, "Acquire after FLUSHALL", s.Acquire(ctx, "r", "d", guardTTL))

	// Stores of other prefixes share the server's marker.
	other := f.Server(t, srv, redisstore.WithRestartGuard(guardTTL))
	recovering(t, "Acquire through another prefix", other.Acquire(ctx, "r", "d", guardTTL))
	warm(t, ctx, other, "r")
	if err := s.Acquire(ctx, "r", "d", guardTTL); err != nil {
		t.Fatalf("Acquire once the shared marker is old enough = %v", err)
	}

	// An unguarded store grants at once, as before.
	if err := srv.Do("FLUSHALL").Error(); err != nil {
		t.Fatal(err)
	}
	plain := f.Server(t, srv)
	if err := plain.Acquire(ctx, "r", "e", time.Minute); err != nil {
		t.Fatalf("Acquire without the guard on a flushed server = %v", err)
	}
}

// In a Redlock, a node recovering is a failed store: the others grant the
// lock, and the error says which one failed and why.
func (f Factory) testRestartGuardInRedlock(t *testing.T) {
	servers := redistest.StartN(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	stores := make([]lock.Store, 3)
	for i, srv := range servers {
		s := f.Server(t, srv, redisstore.WithRestartGuard(guardTTL))
		if i > 0 {
			warm(t, ctx, s, "w")
		}
		stores[i] = s
	}
	l, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	held, err := l.TryLock(ctx, "r", guardTTL)
	if err != nil {
		t.Fatalf("TryLock with one node recovering = %v; want the other two to grant it", err)
	}
	if err := l.Unlock(ctx, held); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	// Two nodes recovering: no quorum, reported as unavailable.
	for _, srv := range servers[1:] {
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		srv.Answers(time.Second)
	}
	var lastErr error
	for range 3 { // the first attempt may fail on the connections the restarts broke
		if _, lastErr = l.TryLock(ctx, "r", guardTTL); errors.Is(lastErr, redisstore.ErrRecovering) {
			break
		}
	}
	if !errors.Is(lastErr, lock.ErrUnavailable) || errors.Is(lastErr, lock.ErrNotAcquired) || !errors.Is(lastErr, redisstore.ErrRecovering) {
		t.Fatalf("TryLock with two of three nodes recovering = %v; want ErrUnavailable naming ErrRecovering", lastErr)
	}
}

func (f Factory) testRestartGuardOptions(t *testing.T) {
	client := f.Client(t, redistest.Start(t))
	for name, opts := range map[string][]redisstore.Option{
		"zero":          {redisstore.WithRestartGuard(0)},
		"sub-ms":        {redisstore.WithRestartGuard(time.Microsecond)},
		"with replicas": {redisstore.WithRestartGuard(time.Second), redisstore.WithWaitReplicas(1, time.Second)},
	} {
		if _, err := f.New(client, opts...); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("New with a restart guard, %s = %v; want lock.ErrInvalid", name, err)
		}
	}
	cluster := f.Client(t, redistest.SharedCluster(t))
	if _, err := f.New(cluster, redisstore.WithRestartGuard(time.Second)); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New with a restart guard on a cluster client = %v; want lock.ErrInvalid", err)
	}
}

// testConformanceRestartGuard: once recovered, a guarded store is a store
// like any other. The guard's maximum TTL covers the kit's longest TTL,
// and its marker is set as if the server had been seen long ago.
func (f Factory) testConformanceRestartGuard(t *testing.T) {
	srv := redistest.Start(t)
	now, err := srv.Do("TIME").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := strconv.ParseInt(now[0], 10, 64)
	if err := srv.Do("SET", redisstore.GuardKey, strconv.FormatInt((sec-3600)*1000, 10)).Error(); err != nil {
		t.Fatal(err)
	}
	client := f.Client(t, srv)
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		return f.On(t, client, redisstore.WithRestartGuard(time.Minute))
	}, nil)
}

// reconnected runs call, again if it failed on a connection a restart
// broke (rueidis reconnects on the next call).
func reconnected(call func() error) error {
	err := call()
	for i := 0; i < 3 && err != nil && !errors.Is(err, lock.ErrNotAcquired) && !errors.Is(err, lock.ErrNotHeld) && !errors.Is(err, redisstore.ErrRecovering); i++ {
		err = call()
	}
	return err
}

// testRestartGuardGivesWokenWaiterHeadStart: under the restart guard a
// release deletes the lock rather than reserve it for the waiter it wakes,
// so, as the package documentation says, the store that released gives
// the woken waiter a head start on its own next acquisition of the lock,
// fenced or not: the acquisition consumes the head start the release
// recorded, as it does without the guard under WithWaitReplicas and for
// permits.
func (f Factory) testRestartGuardGivesWokenWaiterHeadStart(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		srv := redistest.Start(t)
		ctx := ctxFor(t, 30*time.Second)
		releaser := f.Server(t, srv, redisstore.WithPrefix("guardhs:"), redisstore.WithRestartGuard(guardTTL))
		waiter := f.Server(t, srv, redisstore.WithPrefix("guardhs:"), redisstore.WithRestartGuard(guardTTL))
		warm(t, ctx, releaser, "r")
		if err := releaser.Acquire(ctx, "r", "a", guardTTL); err != nil {
			t.Fatal(err)
		}
		woken := make(chan error, 1)
		go func() { woken <- waiter.WaitRelease(ctx, "r") }()
		waitersInLine(t, srv, "guardhs:{r}", 1)
		if err := releaser.Release(ctx, "r", "a"); err != nil {
			t.Fatal(err)
		}
		if err := <-woken; err != nil {
			t.Fatalf("WaitRelease = %v", err)
		}
		if n := redisstore.PendingHandoffs(f.Engine(releaser)); n != 1 {
			t.Fatalf("a guarded release that woke a waiter recorded %d head starts; want 1", n)
		}
		var err error
		if fenced {
			_, err = releaser.AcquireFenced(ctx, "r", "b", guardTTL)
		} else {
			err = releaser.Acquire(ctx, "r", "b", guardTTL)
		}
		if err != nil {
			t.Fatalf("the releaser's acquisition (fenced %v) = %v; want nil", fenced, err)
		}
		if n := redisstore.PendingHandoffs(f.Engine(releaser)); n != 0 {
			t.Fatalf("head starts left after the releaser's guarded acquisition (fenced %v) = %d; want 0: it gave the woken waiter none", fenced, n)
		}
	}
}
