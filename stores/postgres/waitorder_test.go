package postgres_test

import (
	"testing"
	"time"
)

// A caller that looks again at a lock when the TTL it read runs out (the
// lock was extended meanwhile) keeps its place in line: a release wakes
// the caller that has waited longest, as the package doc says, not one
// that got in line after it.
func TestWaitRelookKeepsItsPlace(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	if err := s.Acquire(ctx, "r", "holder", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- s.WaitRelease(ctx, "r") }()
	eventually(t, "the first caller in line", func() bool { return s.Waiting("r") == 1 })
	// Extended: the first caller's timer, armed from the 2s it read,
	// makes it look again; the second reads a minute.
	if err := s.Extend(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	go func() { second <- s.WaitRelease(ctx, "r") }()
	eventually(t, "the second caller in line", func() bool { return s.Waiting("r") == 2 })
	// The first caller's look again marks the lock as waited for: clear
	// the mark, and see it set again.
	if _, err := pool.Exec(ctx, "UPDATE "+s.Table()+" SET waited = false"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first caller to look again", func() bool {
		var waited bool
		if err := pool.QueryRow(ctx, "SELECT waited FROM "+s.Table()).Scan(&waited); err != nil {
			t.Fatal(err)
		}
		return waited
	})
	eventually(t, "both callers in line", func() bool { return s.Waiting("r") == 2 })
	if err := s.Release(ctx, "r", "holder"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("WaitRelease(r) of the first caller = %v; want nil", err)
		}
	case err := <-second:
		t.Fatalf("WaitRelease(r) of the second caller returned %v first: the release woke the caller that got in line later, not the one that has waited longest", err)
	}
	select {
	case err := <-second:
		t.Fatalf("WaitRelease(r) of the second caller = %v after one release; want it still waiting", err)
	default:
	}
}
