package conformance_test

import (
	"context"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// fencesFromZero hands out fences one below the memory store's: strictly
// increasing, but the first is 0, the fence of a lock taken without
// fencing.
type fencesFromZero struct{ *memory.Store }

func (s fencesFromZero) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	fence, err := s.Store.AcquireFenced(ctx, resource, token, ttl)
	if err != nil {
		return 0, err
	}
	return fence - 1, nil
}

// The controls of the rules of clauses the other rules left open: each
// store breaks one clause of the contract, and the rule of that clause
// fails it.
func init() {
	for name, c := range map[string]control{
		"fences-from-zero": {
			store: func() lock.Store { return brokenstore.FencesOnly(fencesFromZero{memory.New()}) },
			rule:  "FencingIncreases", wants: []string{"AcquireFenced(r, a) = fence 0; want a fence > 0: 0 is the fence of a lock taken without fencing"},
		},
		"fenced-locks-linger": {
			store: func() lock.Store { return brokenstore.FencedLocksLinger() },
			rule:  "FencedLock", wants: []string{"Exists(r) = true after Release(r, a) of a lock taken with AcquireFenced; want false"},
		},
		"raise-fence-refreshes-lock": {
			store: func() lock.Store { return brokenstore.RaiseFenceRefreshesLock() },
			rule:  "RaiseFenceLeavesLock", wants: []string{"after RaiseFence(long, ", " while a held long, taken for 30s: TTL(long) = 24h0m0s, true, nil; want 29.999s ≤ remaining ≤ 30.001s, true, nil: the raise changed the lock's TTL"},
		},
		"raise-fence-refreshes-lock-without-ttl": {
			store: func() lock.Store { return brokenstore.FencesOnly(brokenstore.RaiseFenceRefreshesLock()) },
			rule:  "RaiseFenceLeavesLock", wants: []string{"Exists(short) = true ", " after AcquireFenced(short, b, 200ms) and RaiseFence(short, ", "; want false: the raise made the lock outlive its TTL"},
		},
		"raise-fence-leaves-record": {
			store: func() lock.Store { return brokenstore.RaiseFenceLeavesRecord() },
			rule:  "RaiseFenceLeavesLock", wants: []string{"Exists(free) = true after RaiseFence(free, 1000) of a resource never locked; want false"},
		},
		"wait-misses-earlier-expiry": {
			store: func() lock.Store { return brokenstore.WaitMissesEarlierExpiry() },
			rule:  "WaitFreeAfterExpiry", wants: []string{"WaitRelease(r) begun after the lock (ttl 200ms) expired, never released, once Exists(r) said so = context deadline exceeded; want nil at once: r is free"},
		},
		"queue-calls-nil-queued": {
			store: func() lock.Store { return brokenstore.QueueCallsNilQueued() },
			rule:  "QueueNilQueued", wants: []string{"AcquireQueued(r, b) with a nil Queued panicked while a holds r: runtime error: invalid memory address or nil pointer dereference; want it to wait in line without calling Queued, which is called only if set"},
		},
		"permit-wait-blocks-while-partly-held": {
			store: func() lock.Store { return brokenstore.PermitWaitBlocksWhilePartlyHeld() },
			rule:  "WaitPermitPartlyHeld", wants: []string{"WaitPermit(r) with 1 of 3 permits held = context deadline exceeded; want nil at once: a permit is free"},
		},
		"permits-seen-as-locks": {
			store: func() lock.Store { return brokenstore.PermitsSeenAsLocks() },
			rule:  "PermitNamespace", wants: []string{"Exists(q) = true while only permits are held on q, no lock; want false: a permit is not a lock"},
		},
		"permit-dead-context-succeeds": {
			store: func() lock.Store { return brokenstore.PermitDeadContextSucceeds() },
			rule:  "PermitCanceledContext", wants: []string{
				"ReleasePermit(full, b) with a canceled context = nil; want context.Canceled: a failed call must not claim an outcome",
				"ExtendPermit(full, b) with a canceled context = nil; want context.Canceled: a failed call must not claim an outcome",
				"ExtendPermit(full, a0) with a canceled context = nil; want context.Canceled: its holder would believe the permit renewed",
				"ReleasePermit(full, a0) with a canceled context = nil; want context.Canceled: its holder would believe the permit freed",
			},
		},
		"permit-dead-context-succeeds-expired": {
			store: func() lock.Store { return brokenstore.PermitDeadContextSucceeds() },
			rule:  "PermitExpiredDeadline", wants: []string{"ExtendPermit(full, a0) with an expired context = nil; want context.DeadlineExceeded: its holder would believe the permit renewed"},
		},
	} {
		controls[name] = c
	}
}
