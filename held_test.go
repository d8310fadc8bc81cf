package lock_test

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
)

// "Lock and let it expire" (deduplication, once-per-interval jobs): the
// held set forgets locks once no store can still hold them, so its memory
// stays bounded by the locks that can still be held, with the locker busy
// or idle, and UnlockAll sends nothing for them.
func TestHeldSetForgetsExpiredLocks(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "multi"}[multi], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				cs := []*counting{newCounting("c0"), newCounting("c1"), newCounting("c2")}
				var l lock.Locker = mustSingle(t, cs[0], nil)
				if multi {
					l = mustMulti(t, []lock.Store{cs[0], cs[1], cs[2]}, nil)
				}
				const perRound = 1000
				for round := range 10 {
					for i := range perRound {
						_, err := l.TryLock(ctx, "r"+strconv.Itoa(round*perRound+i), time.Second)
						wantNil(t, "TryLock", err)
					}
					time.Sleep(time.Second)
					// At most the last round's locks and the sweeping slack.
					if n := lock.HeldCount(l); n > 3*perRound {
						t.Fatalf("after %d rounds of %d locks left to expire, the held set records %d; want at most %d", round+1, perRound, n, 3*perRound)
					}
				}
				time.Sleep(time.Minute) // idle: every lock expired long ago
				if n := lock.HeldCount(l); n != 0 {
					t.Errorf("a minute after the last lock expired, the held set records %d; want 0", n)
				}
				for _, c := range cs {
					c.calls.Store(0)
				}
				wantNil(t, "UnlockAll()", l.UnlockAll(ctx))
				for _, c := range cs {
					if n := c.calls.Load(); n != 0 {
						t.Errorf("UnlockAll of expired locks sent %d calls to %s; want none", n, c)
					}
				}
			})
		})
	}
}

// A locker that locks a fresh name each time (a lock per request) reuses
// the held set's entries of released locks: the set allocates nothing per
// lock once warm.
func TestHeldSetReusesEntries(t *testing.T) {
	names := make([]string, 20000)
	for i := range names {
		names[i] = "req/" + strconv.Itoa(i)
	}
	if n := lock.HeldSetChurn(names); n != 0 {
		t.Errorf("recording and forgetting a lock on a fresh name allocates %v times; want 0", n)
	}
}

// A long lock recorded first does not keep the janitor from forgetting
// the short ones recorded after it: it sweeps once the earliest recorded
// lock can have expired, not once the first one recorded can have.
func TestHeldSetForgetsShortLocksAfterALongOne(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "multi"}[multi], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				cs := []*counting{newCounting("c0"), newCounting("c1"), newCounting("c2")}
				var l lock.Locker = mustSingle(t, cs[0], nil)
				if multi {
					l = mustMulti(t, []lock.Store{cs[0], cs[1], cs[2]}, nil)
				}
				long, err := l.TryLock(ctx, "long", time.Hour)
				wantNil(t, "TryLock(long)", err)
				const short = 5000
				for i := range short {
					_, err := l.TryLock(ctx, "r"+strconv.Itoa(i), time.Second)
					wantNil(t, "TryLock", err)
				}
				time.Sleep(time.Minute) // idle: every short lock expired long ago
				if n := lock.HeldCount(l); n != 1 {
					t.Errorf("a minute after %d one-second locks expired, with a one-hour lock held, the held set records %d; want 1", short, n)
				}
				wantNil(t, "Unlock(long)", l.Unlock(ctx, long))
			})
		})
	}
}
