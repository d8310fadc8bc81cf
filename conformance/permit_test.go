package conformance_test

import (
	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
)

// The controls of the permit, semaphore and read-write lock rules.
func init() {
	for name, c := range map[string]control{
		"permits-over-admit": {
			store: func() lock.Store { return brokenstore.PermitsOverAdmit() },
			rule:  "PermitLimit", wants: []string{"round 0: 4 of 8 concurrent AcquirePermit(r, …, limit 3) calls succeeded; want exactly 3"},
		},
		"permit-release-without-token-check": {
			store: func() lock.Store { return brokenstore.PermitReleaseWithoutTokenCheck() },
			rule:  "PermitReleaseWrongToken", wants: []string{"ReleasePermit(r, wrongToken) = nil; want ErrNotHeld"},
		},
		"permits-never-expire": {
			store: func() lock.Store { return brokenstore.PermitsNeverExpire() },
			rule:  "PermitExpiry", wants: []string{"want 0: the permits did not expire"},
		},
		"permits-ignore-limit-mismatch": {
			store: func() lock.Store { return brokenstore.PermitsIgnoreLimitMismatch() },
			rule:  "PermitLimitMismatch", wants: []string{"AcquirePermit(r, b, limit 4) while a holds a permit taken with limit 3 = nil; want lock: semaphore limit mismatch"},
		},
		"permit-extend-recreates": {
			store: func() lock.Store { return brokenstore.PermitExtendRecreates() },
			rule:  "PermitExtend", wants: []string{"ExtendPermit(r, b) after b's permit expired = nil; want ErrNotHeld"},
		},
		"permit-release-idempotent": {
			store: func() lock.Store { return brokenstore.PermitReleaseIdempotent() },
			rule:  "PermitReleaseTwice", wants: []string{"ReleasePermit(r, a) a second time = nil; want ErrNotHeld"},
		},
		"permits-share-lock-names": {
			store: func() lock.Store { return brokenstore.PermitsShareLockNames() },
			rule:  "PermitNamespace", wants: []string{"AcquirePermit(r, b) while a lock holds r = lock: not acquired: held by another owner; want nil"},
		},
		"permit-fences-forget-empty": {
			store: func() lock.Store { return brokenstore.PermitFencesForgetEmpty() },
			rule:  "PermitFences", wants: []string{"AcquirePermit(r, b) after every permit was released = fence 1; want a fence > 5"},
		},
		"permit-wait-wakes-on-any-release": {
			store: func() lock.Store { return brokenstore.PermitWaitWakesOnAnyRelease() },
			rule:  "WaitPermitIgnoresOtherResources", wants: []string{"WaitPermit(r) returned nil after ReleasePermit(other, b0), while every permit of r is still held"},
		},
		"permit-wait-misses-release": {
			store: func() lock.Store { return brokenstore.PermitWaitMissesRelease() },
			rule:  "WaitPermit", wants: []string{"WaitPermit(r) still blocked 5s after ReleasePermit(r, a0); want it to return nil"},
		},
		"rwlock-readers-blind-to-writer": {
			store: func() lock.Store { return brokenstore.LocksUnseenBesidePermits() },
			rule:  "RWLockerWriterNotStarved", wants: []string{"Reader().TryLock(r) = nil while Writer().Lock(r) has waited 5s for a reader to leave, and Writer().IsLocked(r) = false; want ErrNotAcquired: new readers do not see the waiting writer"},
		},
		"semaphore-over-overwriting-store": {
			store: func() lock.Store { return brokenstore.OverwriteHeld() },
			rule:  "Semaphore", wants: []string{"workers were inside at once through a semaphore of limit 2; want at most 2"},
		},
		"rwlock-over-store-that-sees-nothing": {
			store: func() lock.Store { return brokenstore.ExistsNeverHeld() },
			rule:  "RWLocker", wants: []string{"Writer().TryLock(r) while readers hold r = nil; want ErrNotAcquired"},
		},
	} {
		controls[name] = c
	}
}
