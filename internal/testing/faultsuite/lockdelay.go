package faultsuite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
)

// PausedHolder is the lock-delay scenario (issue #19), which every
// store's fault tier runs: a holder takes resource "r" for TTL and pauses
// past its validity without releasing (a GC pause, a stopped process)
// while a rival tries to take the lock every 10ms. With Options.LockDelay
// longer than the pause, the holder wakes to find nobody has been inside
// — its lock is still there for it to release, and the release frees it
// at once; the control, without the delay, lets the rival in.
type PausedHolder struct {
	// Holder and Rival are two lockers over the same stores, both made
	// with the same Options.LockDelay.
	Holder, Rival lock.Locker
	// TTL is the lock's; Pause, how long after taking the lock the holder
	// wakes: past TTL and the time the store takes to let an expired lock
	// go, and well within the delay.
	TTL, Pause time.Duration
	// Delayed tells whether the lockers have a LockDelay longer than
	// Pause (the scenario) or none (the control).
	Delayed bool
}

// Run runs the scenario within ctx, fails t if the holder's release or
// the rival's next attempt goes other than the lockers' setup says, and
// returns the report: Violations counts the rival's entries while the
// paused holder believed it held the lock. Residue and LeakedGoroutines
// are the caller's to fill in.
func (p PausedHolder) Run(ctx context.Context, t testing.TB) contention.Report {
	t.Helper()
	l, err := p.Holder.Lock(ctx, "r", p.TTL)
	if err != nil {
		t.Fatalf("holder's Lock() = %v", err)
	}
	wake := time.Now().Add(p.Pause)
	inside, tries := 0, 0
	for time.Now().Before(wake) {
		tries++
		got, err := p.Rival.TryLock(ctx, "r", p.TTL)
		switch {
		case err == nil:
			inside++
			if err := p.Rival.Unlock(ctx, got); err != nil {
				t.Errorf("rival's Unlock() = %v", err)
			}
		case !errors.Is(err, lock.ErrNotAcquired):
			t.Fatalf("rival's TryLock() = %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The holder wakes, its validity long gone, and releases.
	err = p.Holder.Unlock(ctx, l)
	switch {
	case p.Delayed && err != nil:
		t.Errorf("holder's Unlock() after its pause = %v; want nil: nobody took its lock within the delay", err)
	case !p.Delayed && !errors.Is(err, lock.ErrNotHeld):
		t.Errorf("holder's Unlock() after its pause = %v; want ErrNotHeld: the rival took the lock", err)
	}
	if p.Delayed {
		// Released: free at once.
		got, err := p.Rival.TryLock(ctx, "r", p.TTL)
		if err != nil {
			t.Fatalf("rival's TryLock() after the holder's Unlock = %v; want nil", err)
		}
		_ = p.Rival.Unlock(ctx, got)
	}
	rep := contention.Report{Acquisitions: 1 + inside, Violations: inside, MaxHolders: 1}
	if inside > 0 {
		rep.MaxHolders = 2 // the rival, and the paused holder who believes it holds the lock
	}
	rep.Add("rival_tries", fmt.Sprint(tries))
	return rep
}
