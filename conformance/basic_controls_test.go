package conformance_test

import (
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
)

// The controls of the rules that had none: each rule fails on a store
// that breaks it, for the reason the rule gives.
func init() {
	for name, c := range map[string]control{
		"exists-never-held": {
			store: func() lock.Store { return brokenstore.ExistsNeverHeld() },
			rule:  "AcquireFree", wants: []string{"Exists(r) = false after Acquire(r, a) = nil; want true"},
		},
		"release-of-free-succeeds-twice": {
			store: func() lock.Store { return brokenstore.ReleaseOfFreeSucceeds() },
			rule:  "ReleaseTwice", wants: []string{"Release(r, a) a second time = nil; want ErrNotHeld"},
		},
		"release-of-free-succeeds-never-held": {
			store: func() lock.Store { return brokenstore.ReleaseOfFreeSucceeds() },
			rule:  "ReleaseNeverHeld", wants: []string{"Release(r, a) of a resource never locked = nil; want ErrNotHeld"},
		},
		"release-ignores-expiry": {
			store: func() lock.Store { return brokenstore.ReleaseIgnoresExpiry() },
			rule:  "ReleaseAfterExpiry", wants: []string{"Release(r, a) after r expired = nil; want ErrNotHeld"},
		},
		"release-without-token-check-takeover": {
			store: func() lock.Store { return brokenstore.ReleaseWithoutTokenCheck() },
			rule:  "ReleaseAfterTakeover", wants: []string{"Release(r, a) after b took r over = nil; want ErrNotHeld"},
		},
		"one-lock-per-directory": {
			store: func() lock.Store { return brokenstore.OneLockPerDirectory() },
			rule:  "IndependentResources", wants: []string{"Acquire(r2, b) while a holds r1 = lock: not acquired: held by another owner; want nil"},
		},
		"acquire-checks-then-sets": {
			store: func() lock.Store { return brokenstore.AcquireChecksThenSets(time.Millisecond) },
			rule:  "Contention", wants: []string{"round 0: 8 of 8 concurrent Acquire(r, …) calls succeeded; want exactly 1"},
		},
		"extend-ignored": {
			store: func() lock.Store { return brokenstore.ExtendIgnored() },
			rule:  "ExtendOwner", wants: []string{"after Extend(r, a, 30s): TTL(r) = 200ms, true, nil; want"},
		},
		"extend-without-token-check": {
			store: func() lock.Store { return brokenstore.ExtendWithoutTokenCheck() },
			rule:  "ExtendWrongToken", wants: []string{"Extend(r, wrongToken) = nil; want ErrNotHeld"},
		},
		"extend-without-token-check-takeover": {
			store: func() lock.Store { return brokenstore.ExtendWithoutTokenCheck() },
			rule:  "ExtendAfterTakeover", wants: []string{"Extend(r, a) after b took r over = nil; want ErrNotHeld"},
		},
		"wait-blocks-when-free": {
			store: func() lock.Store { return brokenstore.WaitBlocksWhenFree() },
			rule:  "WaitFree", wants: []string{"WaitRelease(r) of a free resource = context deadline exceeded; want nil"},
		},
		"wait-ignores-expiry": {
			store: func() lock.Store { return brokenstore.WaitIgnoresExpiry() },
			rule:  "WaitWakesOnExpiry", wants: []string{"WaitRelease(r) still blocked ", "after a lock with ttl 200ms expired; want it to return nil"},
		},
		"wait-nil-on-context-end": {
			store: func() lock.Store { return brokenstore.WaitNilOnContextEnd() },
			rule:  "WaitHonoursContext", wants: []string{"WaitRelease(r) with a 50ms context while r is held = nil; want context.DeadlineExceeded"},
		},
		"start-ignores-context": {
			store: func() lock.Store { return brokenstore.StartIgnoresContext() },
			rule:  "StartCanceledContext", wants: []string{"Start(acquire held, a) with a canceled context = lock: not acquired: held by another owner; want context.Canceled"},
		},
		"start-loses-concurrent-answers": {
			store: func() lock.Store { return brokenstore.StartLosesConcurrentAnswers() },
			rule:  "StartConcurrent", wants: []string{"started calls answered after 35s; want every one"},
		},
		"single-locker-over-overwriting-store": {
			store: func() lock.Store { return brokenstore.OverwriteHeld() },
			rule:  "SingleLocker", wants: []string{"a worker entered the critical section while another was inside"},
		},
		"multi-locker-over-overwriting-stores": {
			store: func() lock.Store { return brokenstore.OverwriteHeld() },
			rule:  "MultiLocker", wants: []string{"a worker entered the critical section while another was inside"},
		},
	} {
		controls[name] = c
	}
}

// The controls of DeadlineInFlight, on the fake clock and in real time:
// a store 2ms away whose calls are cut short by their deadlines reports
// them as refused. StartOwnDeadline fails it too, for the calls it
// starts.
func init() {
	controls["late-refusals"] = control{
		store: func() lock.Store { return brokenstore.LateRefusals(2 * time.Millisecond) },
		rule:  "DeadlineInFlight", wants: []string{
			"Acquire(acquire0-0, a) of a free resource with a 50µs deadline = lock: not acquired: held by another owner; want nil, or an error of its own (the context's or the transport's), not ErrNotAcquired: a call its deadline cut short cannot know that outcome",
			"AcquireFenced(acquirefenced0-0, a) of a free resource with a 50µs deadline = lock: not acquired: held by another owner; want nil, or an error of its own",
			"Release(release0-0, a) by its holder with a 50µs deadline = lock: not held: expired or taken over; want nil, or an error of its own (the context's or the transport's), not ErrNotHeld",
			"Extend(extend0-0, a) by its holder with a 50µs deadline = lock: not held: expired or taken over; want nil, or an error of its own",
		},
	}
	controls["late-refusals-real-time"] = control{
		store: func() lock.Store { return brokenstore.LateRefusals(2 * time.Millisecond) }, realTime: true,
		rule: "DeadlineInFlight", wants: []string{"deadline = lock: not acquired: held by another owner; want nil, or an error of its own (the context's or the transport's), not ErrNotAcquired"},
	}
	controls["late-refusals-started"] = control{
		store: func() lock.Store { return brokenstore.LateRefusals(2 * time.Millisecond) },
		rule:  "StartOwnDeadline", wants: []string{"round 0: Start(acquire r1) of a free resource with a 50µs deadline = lock: not acquired: held by another owner; want nil, or an error of its own (the context's or the transport's), not ErrNotAcquired"},
	}
}

// The controls of ExtendRacesExpiry, on the fake clock and in real time.
func init() {
	controls["extend-checks-then-sets"] = control{
		store: func() lock.Store { return brokenstore.ExtendChecksThenSets(20 * time.Millisecond) },
		rule:  "ExtendRacesExpiry", wants: []string{"want nil: a's Extend, racing its expiry, set the TTL of b's lock"},
	}
	controls["extend-checks-then-sets-real-time"] = control{
		store: func() lock.Store { return brokenstore.ExtendChecksThenSets(100 * time.Millisecond) }, realTime: true,
		rule: "ExtendRacesExpiry", wants: []string{"want nil: a's Extend, racing its expiry, set the TTL of b's lock"},
	}
}
