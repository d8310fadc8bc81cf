package postgres_test

// Checks of what the package's documentation (doc.go and the doc comments
// of its exported names) promises and the other tests do not cover.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/postgres"
)

// WithName's default: "postgres" followed by the host, port and database
// the pool connects to.
func TestDocDefaultName(t *testing.T) {
	pool := shared(t)
	s, err := postgres.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	cc := pool.Config().ConnConfig
	if want := fmt.Sprintf("postgres %s:%d/%s", cc.Host, cc.Port, cc.Database); s.String() != want {
		t.Errorf("String() of a store made without WithName = %q; want %q", s.String(), want)
	}
	if named, err := postgres.New(pool, postgres.WithName("locks")); err != nil || named.String() != "locks" {
		t.Errorf("New(WithName(locks)).String() = %q, %v; want locks", named.String(), err)
	}
}

// Sweep deletes in batches until none is left, and returns how many it
// deleted; live locks stay.
func TestDocSweepDeletesEveryBatch(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, time.Minute)
	s := newStore(t, pool, postgres.WithSweepInterval(0))
	const expired = 2500 // more than one batch
	if _, err := pool.Exec(ctx, "INSERT INTO "+s.Table()+` (resource, token, expires_at)
SELECT convert_to('expired' || i, 'UTF8'), 't', clock_timestamp() - interval '1 minute' FROM generate_series(1, $1) i`, expired); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, "live", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != expired {
		t.Fatalf("Sweep over %d expired locks = %d, %v; want %d, nil", expired, n, err, expired)
	}
	if n := count(t, pool, s); n != 1 {
		t.Errorf("%d rows after the sweep; want the live lock's", n)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Errorf("Sweep with nothing expired = %d, %v; want 0, nil", n, err)
	}
}

// An expired lock's row is taken over in place by the next acquisition
// of the resource, whoever asks; the holder whose lock expired then gets
// ErrNotHeld, and a released lock's row is deleted.
func TestDocExpiredRowTakenOverInPlace(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool, postgres.WithSweepInterval(0))
	if _, err := pool.Exec(ctx, "INSERT INTO "+s.Table()+` (resource, token, expires_at)
VALUES ('r', 'old', clock_timestamp() - interval '1 second')`); err != nil {
		t.Fatal(err)
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Errorf("Exists(r) of an expired row = %v, %v; want false, nil", held, err)
	}
	if _, ok, err := s.Holder(ctx, "r"); err != nil || ok {
		t.Errorf("Holder(r) of an expired row = %v, %v; want false, nil", ok, err)
	}
	if err := s.Extend(ctx, "r", "old", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(r, old) of an expired row = %v; want ErrNotHeld (an expired lock is never re-created)", err)
	}
	fence, err := s.AcquireFenced(ctx, "r", "new", time.Minute)
	if err != nil {
		t.Fatalf("AcquireFenced(r, new) over an expired row = %v; want nil", err)
	}
	if fence == 0 {
		t.Errorf("AcquireFenced(r, new) = fence 0; want a fence from the sequence")
	}
	if n := count(t, pool, s); n != 1 {
		t.Errorf("%d rows after taking over an expired lock; want 1 (taken over in place)", n)
	}
	if err := s.Release(ctx, "r", "old"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, old) after another took the lock over = %v; want ErrNotHeld", err)
	}
	if err := s.Release(ctx, "r", "new"); err != nil {
		t.Fatalf("Release(r, new) = %v", err)
	}
	if n := count(t, pool, s); n != 0 {
		t.Errorf("%d rows after Release; want 0 (a released lock's row is deleted)", n)
	}
}

// Sweep, Migrate and the other calls refuse a context that has ended
// with its error, before anything is sent.
func TestDocEndedContext(t *testing.T) {
	s, err := postgres.New(deadPool(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Sweep(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Sweep(canceled) = %v; want context.Canceled", err)
	}
	if err := s.Migrate(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Migrate(canceled) = %v; want context.Canceled", err)
	}
	if err := s.Acquire(ctx, "r", "t", time.Second); !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire(canceled) = %v; want context.Canceled", err)
	}
}
