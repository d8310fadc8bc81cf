package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
)

// A lock and its fence outlive a restart of the whole cluster (its one
// member killed and started again on its data), as the package doc
// promises: the held lock is still its holder's, with the same fence, and
// the fences drawn after the restart exceed every one drawn before it,
// on the resource held across it and on one released before it.
func TestLocksAndFencesSurviveClusterRestart(t *testing.T) {
	c := etcdtest.Start(t, 1, nil)
	client := clientOf(t, c.Endpoints()...)
	s := newStore(t, client)
	ctx := ctxFor(t, 60*time.Second)
	held, err := s.AcquireFenced(ctx, "held", "a~alice", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	released, err := s.AcquireFenced(ctx, "released", "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "released", "b"); err != nil {
		t.Fatal(err)
	}

	if err := c.Restart(c.Members[0]); err != nil {
		t.Fatal(err)
	}

	if f, ok, err := s.LastFence(ctx, "held"); err != nil || !ok || f != held {
		t.Errorf("LastFence(held) after the restart = %d, %v, %v; want %d, true: the lock survives", f, ok, err, held)
	}
	if h, ok, err := s.Holder(ctx, "held"); err != nil || !ok || h != "alice" {
		t.Errorf("Holder(held) after the restart = %q, %v, %v; want alice, true", h, ok, err)
	}
	if err := s.Acquire(ctx, "held", "c", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire(held, c) after the restart = %v; want ErrNotAcquired: a's lock survives", err)
	}
	if err := s.Extend(ctx, "held", "a~alice", time.Minute); err != nil {
		t.Errorf("Extend(held, a) after the restart = %v; want nil", err)
	}
	if err := s.Release(ctx, "held", "a~alice"); err != nil {
		t.Errorf("Release(held, a) after the restart = %v; want nil", err)
	}
	if f, err := s.AcquireFenced(ctx, "held", "c", time.Minute); err != nil || f <= held {
		t.Errorf("AcquireFenced(held, c) after the restart = %d, %v; want a fence above %d", f, err, held)
	}
	if f, err := s.AcquireFenced(ctx, "released", "d", time.Minute); err != nil || f <= released {
		t.Errorf("AcquireFenced(released, d) after the restart = %d, %v; want a fence above %d", f, err, released)
	}
}
