package memcache_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// These tests race a holder's Release or Extend against a new holder, a
// thousand times each. A lock's expiry is simulated by deleting its key
// (to memcached's add and cas an expired item and a deleted one are the
// same: absent), so the race can be run without waiting a second each
// time. Every round checks the new holder's item afterwards: still there,
// still its token, still its own TTL.

const (
	raceRounds = 1000
	newTTL     = time.Minute // the new holder's TTL
	staleTTL   = time.Hour   // what the stale holder's Extend asks for
)

// raceFixture is one server, the stale holder's store a and the new
// holder's store b, over separate clients, with the same prefix.
type raceFixture struct {
	srv    *memcachetest.Server
	raw    *gomemcache.Client // for the simulated expiry
	a, b   *memcache.Store
	prefix string
}

func newRaceFixture(t *testing.T) *raceFixture {
	srv := memcachetest.Start(t, nil)
	f := &raceFixture{srv: srv, raw: srv.Client(t), prefix: "race:"}
	f.a = newStore(t, srv.Client(t), memcache.WithPrefix(f.prefix))
	f.b = newStore(t, srv.Client(t), memcache.WithPrefix(f.prefix))
	return f
}

// expire makes the lock on r disappear, as its expiry would.
func (f *raceFixture) expire(r string) error {
	if err := f.raw.Delete(f.prefix + r); err != nil && !errors.Is(err, gomemcache.ErrCacheMiss) {
		return err
	}
	return nil
}

// foreign reports what went wrong with the new holder's item, if anything.
func (f *raceFixture) foreign(t *testing.T, r, token string) string {
	it, found := item(t, f.srv, f.prefix+r)
	switch {
	case !found:
		return "deleted"
	case it.Value != token:
		return fmt.Sprintf("overwritten with %q", it.Value)
	case it.TTL > int64(newTTL.Seconds()):
		return fmt.Sprintf("extended to %ds", it.TTL)
	}
	return ""
}

// The window is opened on purpose: between the stale holder's gets (which
// still sees its token) and its cas, its lock expires and a new holder
// takes the resource. The cas must fail, the store must read again, and
// report the lock not held; the new holder's lock must be untouched.
func TestStaleHolderInsideCASWindow(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"Release", "Extend"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			f := newRaceFixture(t)
			var armed atomic.Bool
			var hookErr error
			var tokB string
			memcache.SetBeforeCAS(f.a, func(string) {
				if !armed.CompareAndSwap(true, false) {
					return // only the first cas of a call; the store's retry must go through
				}
				if hookErr = f.expire("r"); hookErr == nil {
					hookErr = f.b.Acquire(ctx(t), "r", tokB, newTTL)
				}
			})
			notHeld, damaged := 0, map[string]int{}
			for i := range raceRounds {
				tokA, tokB2 := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
				tokB = tokB2
				if err := f.a.Acquire(ctx(t), "r", tokA, newTTL); err != nil {
					t.Fatalf("round %d: Acquire(r, a) = %v", i, err)
				}
				armed.Store(true)
				var err error
				if op == "Release" {
					err = f.a.Release(ctx(t), "r", tokA)
				} else {
					err = f.a.Extend(ctx(t), "r", tokA, staleTTL)
				}
				if hookErr != nil {
					t.Fatalf("round %d: expiring a's lock and acquiring for b: %v", i, hookErr)
				}
				if armed.Load() {
					t.Fatalf("round %d: %s(r, a) never reached its cas", i, op)
				}
				if errors.Is(err, lock.ErrNotHeld) {
					notHeld++
				} else {
					t.Errorf("round %d: %s(r, a) after b took r over = %v; want ErrNotHeld", i, op, err)
				}
				if what := f.foreign(t, "r", tokB); what != "" {
					damaged[what]++
				}
				if err := f.b.Release(ctx(t), "r", tokB); err != nil {
					t.Fatalf("round %d: Release(r, b) = %v", i, err)
				}
			}
			t.Logf("%d rounds: %s reported ErrNotHeld %d times; foreign locks damaged: %d", raceRounds, op, notHeld, len(damaged))
			if len(damaged) > 0 {
				t.Errorf("foreign locks deleted or extended: %v; want none", damaged)
			}
		})
	}
}

// Free-running: the stale holder's Release or Extend and the expiry plus
// new holder run concurrently, with whatever interleaving the scheduler
// gives. Whatever the order, a new holder's lock is never deleted or
// extended, and the stale holder is told the truth: nil only if it still
// held the lock when its cas ran (then the new holder could not take it
// until after).
func TestStaleHolderRacesNewHolder(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"Release", "Extend"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			f := newRaceFixture(t)
			var sawToken atomic.Int32 // gets calls of a that saw a's token
			memcache.SetBeforeCAS(f.a, func(string) { sawToken.Add(1) })
			outcomes, damaged := map[string]int{}, map[string]int{}
			for i := range raceRounds {
				sawToken.Store(0)
				tokA, tokB := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
				if err := f.a.Acquire(ctx(t), "r", tokA, newTTL); err != nil {
					t.Fatalf("round %d: Acquire(r, a) = %v", i, err)
				}
				var wg sync.WaitGroup
				var errA, errB error
				wg.Add(2)
				go func() {
					defer wg.Done()
					if op == "Release" {
						errA = f.a.Release(ctx(t), "r", tokA)
					} else {
						errA = f.a.Extend(ctx(t), "r", tokA, staleTTL)
					}
				}()
				go func() {
					defer wg.Done()
					if errB = f.expire("r"); errB == nil {
						errB = f.b.Acquire(ctx(t), "r", tokB, newTTL)
					}
				}()
				wg.Wait()
				if errB != nil {
					// After the expiry nothing may re-create a's lock, so
					// b's add must succeed.
					t.Fatalf("round %d: expiring a's lock and Acquire(r, b) = %v; want nil", i, errB)
				}
				switch {
				case errA == nil:
					outcomes["nil (a's cas before the expiry)"]++
				case errors.Is(errA, lock.ErrNotHeld) && sawToken.Load() > 0:
					outcomes["ErrNotHeld after a gets that saw a's token (expiry between gets and cas)"]++
				case errors.Is(errA, lock.ErrNotHeld):
					outcomes["ErrNotHeld from the gets"]++
				default:
					t.Fatalf("round %d: %s(r, a) = %v; want nil or ErrNotHeld", i, op, errA)
				}
				if what := f.foreign(t, "r", tokB); what != "" {
					damaged[what]++
				}
				if err := f.b.Release(ctx(t), "r", tokB); err != nil {
					t.Fatalf("round %d: Release(r, b) = %v", i, err)
				}
			}
			t.Logf("%d rounds of %s racing a new holder: outcomes %v", raceRounds, op, outcomes)
			if len(damaged) > 0 {
				t.Errorf("foreign locks deleted or extended: %v; want none", damaged)
			}
		})
	}
}

// A release frees the resource at once: the next add succeeds, every time.
func TestReleaseThenReacquire(t *testing.T) {
	t.Parallel()
	f := newRaceFixture(t)
	failures := 0
	for i := range raceRounds {
		tokA, tokB := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		if err := f.a.Acquire(ctx(t), "r", tokA, newTTL); err != nil {
			t.Fatalf("round %d: Acquire(r, a) = %v", i, err)
		}
		if err := f.a.Release(ctx(t), "r", tokA); err != nil {
			t.Fatalf("round %d: Release(r, a) = %v", i, err)
		}
		if err := f.b.Acquire(ctx(t), "r", tokB, newTTL); err != nil {
			failures++
			t.Errorf("round %d: Acquire(r, b) right after Release(r, a) = %v; want nil", i, err)
			continue
		}
		if err := f.b.Release(ctx(t), "r", tokB); err != nil {
			t.Fatalf("round %d: Release(r, b) = %v", i, err)
		}
	}
	if failures > 0 {
		t.Errorf("re-acquisitions right after a release failed %d of %d times; want 0", failures, raceRounds)
	}
}

// An Extend of the same lock (same token) between a Release's or Extend's
// gets and its cas changes the item's CAS id: the store must read again
// and succeed, not report the lock not held.
func TestOwnExtendInsideCASWindow(t *testing.T) {
	t.Parallel()
	f := newRaceFixture(t)
	var armed atomic.Bool
	var hookErr error
	var tok string
	memcache.SetBeforeCAS(f.a, func(string) {
		if armed.CompareAndSwap(true, false) {
			hookErr = f.b.Extend(ctx(t), "r", tok, 2*newTTL) // b's store, a's token: the same owner elsewhere
		}
	})
	for i := range raceRounds {
		tok = fmt.Sprintf("a%d", i)
		if err := f.a.Acquire(ctx(t), "r", tok, newTTL); err != nil {
			t.Fatalf("round %d: Acquire(r, a) = %v", i, err)
		}
		armed.Store(true)
		if err := f.a.Extend(ctx(t), "r", tok, newTTL); err != nil || hookErr != nil {
			t.Fatalf("round %d: Extend(r, a) with a concurrent Extend of the same lock = %v (concurrent: %v); want nil", i, err, hookErr)
		}
		if it, found := item(t, f.srv, f.prefix+"r"); !found || it.Value != tok || it.TTL > int64(newTTL.Seconds()) {
			t.Fatalf("round %d: after Extend(r, a, %v): item %+v, found %v; want a's token with the TTL of the later Extend", i, newTTL, it, found)
		}
		armed.Store(true)
		if err := f.a.Release(ctx(t), "r", tok); err != nil || hookErr != nil {
			t.Fatalf("round %d: Release(r, a) with a concurrent Extend of the same lock = %v (concurrent: %v); want nil", i, err, hookErr)
		}
		if _, found := item(t, f.srv, f.prefix+"r"); found {
			t.Fatalf("round %d: r still held after Release(r, a) = nil", i)
		}
	}
}
