package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// ForceRelease deletes the lock whoever holds it and reports whether it
// was held; the holder learns of it at its next Extend or Release
// (ErrNotHeld), no row is left, and a caller waiting for the resource is
// woken as by a release. An expired lock is not held.
func TestForceRelease(t *testing.T) {
	pool := shared(t)
	s := newStore(t, pool)
	ctx := ctxFor(t, 30*time.Second)
	if held, err := s.ForceRelease(ctx, "r"); err != nil || held {
		t.Errorf("ForceRelease(r) of a free resource = %v, %v; want false, nil", held, err)
	}
	if err := s.Acquire(ctx, "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.WaitRelease(ctx, "r") }()
	eventually(t, "in line", func() bool { return s.Waiting("r") == 1 })
	if held, err := s.ForceRelease(ctx, "r"); err != nil || !held {
		t.Errorf("ForceRelease(r) of a held resource = %v, %v; want true, nil", held, err)
	}
	if err := <-waited; err != nil {
		t.Errorf("WaitRelease(r) across ForceRelease = %v; want nil", err)
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Errorf("Exists(r) after ForceRelease = %v, %v; want false, nil", held, err)
	}
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("%d rows left after ForceRelease; want 0", rows)
	}
	if err := s.Extend(ctx, "r", "a", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(r, a) by the holder after ForceRelease = %v; want ErrNotHeld", err)
	}
	if err := s.Release(ctx, "r", "a"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, a) by the holder after ForceRelease = %v; want ErrNotHeld", err)
	}
	if err := s.Acquire(ctx, "expired", "b", time.Microsecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, "expired", func() bool { held, err := s.Exists(ctx, "expired"); return err == nil && !held })
	if held, err := s.ForceRelease(ctx, "expired"); err != nil || held {
		t.Errorf("ForceRelease(expired) of an expired lock = %v, %v; want false, nil", held, err)
	}
}
