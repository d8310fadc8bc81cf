package faultsuite_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
)

// Lock delay: a holder pauses past its validity without releasing (a GC
// pause, a stopped process) while a rival tries to take the lock every
// few milliseconds. With Options.LockDelay, the holder wakes within the
// delay to find nobody else has been inside — its lock is still there
// for it to release; the control without the delay lets the rival in.
func TestLockDelayPausedHolder(t *testing.T) {
	const (
		ttl   = 300 * time.Millisecond
		pause = ttl + 700*time.Millisecond // the holder wakes this long after taking the lock
		delay = 5 * time.Second            // well past the pause, however slow the machine
	)
	for _, eb := range electBackends() {
		for _, d := range []time.Duration{delay, 0} {
			name := fmt.Sprintf("%s/delay=%v", eb.name, d)
			t.Run(name, func(t *testing.T) {
				var s *scenario
				if d > 0 {
					s = begin(t, "lock-delay-paused-holder", eb.name)
				} else {
					s = beginControl(t, "no-lock-delay-paused-holder", eb.name)
				}
				c := eb.build(s, 2, lock.Options{LockDelay: d})
				holder, rival := c.lockers[0], c.lockers[1]
				l, err := holder.Lock(s.ctx, "r", ttl)
				if err != nil {
					t.Fatalf("holder's Lock() = %v", err)
				}
				wake := time.Now().Add(pause)
				inside, tries := 0, 0
				for time.Now().Before(wake) {
					tries++
					got, err := rival.TryLock(s.ctx, "r", ttl)
					switch {
					case err == nil:
						inside++
						if err := rival.Unlock(s.ctx, got); err != nil {
							t.Errorf("rival's Unlock() = %v", err)
						}
					case !errors.Is(err, lock.ErrNotAcquired):
						t.Fatalf("rival's TryLock() = %v", err)
					}
					time.Sleep(10 * time.Millisecond)
				}
				// The holder wakes, its validity long gone, and releases.
				err = holder.Unlock(s.ctx, l)
				switch {
				case d > 0 && err != nil:
					t.Errorf("holder's Unlock() after its pause = %v; want nil: nobody took its lock within the delay", err)
				case d == 0 && !errors.Is(err, lock.ErrNotHeld):
					t.Errorf("holder's Unlock() after its pause = %v; want ErrNotHeld: the rival took the lock", err)
				}
				if d > 0 {
					// Released: free at once.
					got, err := rival.TryLock(s.ctx, "r", ttl)
					if err != nil {
						t.Fatalf("rival's TryLock() after the holder's Unlock = %v; want nil", err)
					}
					_ = rival.Unlock(s.ctx, got)
				}
				rep := contention.Report{Acquisitions: 1 + inside, Violations: inside, MaxHolders: 1}
				if inside > 0 {
					rep.MaxHolders = 2 // the rival, and the paused holder who believes it holds the lock
				}
				rep.Add("rival_tries", fmt.Sprint(tries))
				s.finish(rep, ttl+time.Second, c.count)
			})
		}
	}
}
