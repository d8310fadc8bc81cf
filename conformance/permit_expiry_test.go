package conformance_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// The controls of the rules of permits that expire one by one, of the
// limit after expiry, of permit calls with dead contexts, and of
// WaitPermit on expiry and on its context's end. Each store is a memory
// store with one permit method broken.
func init() {
	for name, c := range map[string]control{
		"permit-acquire-refreshes-others": {
			store: func() lock.Store { return permitAcquireRefreshesOthers() },
			rule:  "PermitPartialExpiry", wants: []string{"Permits(r) = 3 ", "want 2: the permits did not expire"},
		},
		"permit-limit-outlives-permits": {
			store: func() lock.Store { return permitLimitOutlivesPermits() },
			rule:  "PermitLimitAfterExpiry", wants: []string{"AcquirePermit(r, b, limit 4) once the only permit, taken with limit 3, expired = lock: semaphore limit mismatch"},
		},
		"permit-contention-on-timeout": {
			store: func() lock.Store { return permitContentionOnTimeout() },
			rule:  "PermitCanceledContext", wants: []string{
				"AcquirePermit(full, b, limit 3) with a canceled context = lock: not acquired: held by another owner; want context.Canceled, not ErrNotAcquired",
				"ReleasePermit(full, b) with a canceled context = lock: not held",
			},
		},
		"permit-contention-on-expired-deadline": {
			store: func() lock.Store { return permitContentionOnTimeout() },
			rule:  "PermitExpiredDeadline", wants: []string{"AcquirePermit(full, b, limit 3) with an expired context = lock: not acquired: held by another owner; want context.DeadlineExceeded, not ErrNotAcquired"},
		},
		"permits-expire-early": {
			store: func() lock.Store { return brokenstore.PermitsExpireEarly(0.5) },
			rule:  "PermitLives", wants: []string{
				"Permits(r) = 0 100ms after AcquirePermit(r, a, limit 3, 200ms) (granularity 0s); want 1 until 200ms: the permit expired early",
				"Permits(r) = 0 100ms after ExtendPermit(r, a, 200ms) of a permit taken for 200ms (granularity 0s); want 1 until 200ms: the permit expired early",
				"after AcquirePermit(r, a, limit 3, 5.5s) (granularity 0s); want 1 until 5.5s: the permit expired early",
				"after ExtendPermit(r, a, 5.5s) of a permit taken for 200ms (granularity 0s); want 1 until 5.5s: the permit expired early",
			},
		},
		"permits-expire-early-real-time": {
			store: func() lock.Store { return brokenstore.PermitsExpireEarly(0.5) }, realTime: true,
			rule: "PermitLives", wants: []string{"after ExtendPermit(r, a, 5.5s) of a permit taken for 200ms (granularity 0s); want 1 until 5.5s: the permit expired early"},
		},
		"permit-wait-ignores-expiry": {
			store: func() lock.Store { return brokenstore.PermitWaitIgnoresExpiry() },
			rule:  "WaitPermitWakesOnExpiry", wants: []string{"WaitPermit(r) still blocked", "want it to return nil once they expire"},
		},
		"permit-extend-never-shortens": {
			store: func() lock.Store { return permitExtendNeverShortens() },
			rule:  "PermitExtendShortens", wants: []string{"after ExtendPermit(r, a, 200ms) of a permit taken for 30s with ttl 200ms; want 0: the permits did not expire"},
		},
		"permit-wait-ignores-context": {
			store: func() lock.Store { return permitWaitIgnoresContext() },
			rule:  "WaitPermitHonoursContext", wants: []string{"WaitPermit(r) still blocked 5s after its context ended; want it to return context.DeadlineExceeded"},
		},
	} {
		controls[name] = c
	}
}

// permitAcquireRefreshesOthers sets the TTL of every permit held on a
// resource to that of each new one, as a store that keeps a resource's
// permits under one key with one TTL: a permit that should have expired
// lives on while others come.
func permitAcquireRefreshesOthers() *brokenstore.PermitStore {
	var mu sync.Mutex
	holders := make(map[string][]string)
	return brokenstore.NewPermitStore(func(mem *memory.Store, f *brokenstore.PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			mu.Lock()
			defer mu.Unlock()
			fence, err := mem.AcquirePermit(ctx, resource, token, limit, ttl)
			if err != nil {
				return 0, err
			}
			for _, other := range holders[resource] {
				_ = mem.ExtendPermit(ctx, resource, other, ttl) // ErrNotHeld for the expired: they stay gone
			}
			holders[resource] = append(holders[resource], token)
			return fence, nil
		}
	})
}

// permitLimitOutlivesPermits remembers the limit a resource's first
// permit was taken under for good, and refuses any other.
func permitLimitOutlivesPermits() *brokenstore.PermitStore {
	var mu sync.Mutex
	limits := make(map[string]int)
	return brokenstore.NewPermitStore(func(mem *memory.Store, f *brokenstore.PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			mu.Lock()
			defer mu.Unlock()
			if was, ok := limits[resource]; ok && was != limit {
				return 0, fmt.Errorf("%w: %q was taken with limit %d", lock.ErrLimitMismatch, resource, was)
			}
			limits[resource] = limit
			return mem.AcquirePermit(ctx, resource, token, limit, ttl)
		}
	})
}

// permitContentionOnTimeout reports every failed AcquirePermit as
// contention, and every failed ReleasePermit as a permit not held, a
// dead context included.
func permitContentionOnTimeout() *brokenstore.PermitStore {
	return brokenstore.NewPermitStore(func(mem *memory.Store, f *brokenstore.PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			fence, err := mem.AcquirePermit(ctx, resource, token, limit, ttl)
			if err != nil {
				return 0, lock.ErrNotAcquired
			}
			return fence, nil
		}
		f.ReleasePermit = func(ctx context.Context, resource, token string) error {
			if err := mem.ReleasePermit(ctx, resource, token); err != nil {
				return lock.ErrNotHeld
			}
			return nil
		}
	})
}

// permitWaitIgnoresContext waits for a permit however long it takes,
// whatever its caller's context says.
func permitWaitIgnoresContext() *brokenstore.PermitStore {
	return brokenstore.NewPermitStore(func(mem *memory.Store, f *brokenstore.PermitFuncs) {
		f.WaitPermit = func(ctx context.Context, resource string) error {
			return mem.WaitPermit(context.WithoutCancel(ctx), resource)
		}
	})
}

// permitExtendNeverShortens ignores an ExtendPermit that would end the
// permit sooner than it was set to, as a store that keeps the later of
// two expiries (a ZADD GT).
func permitExtendNeverShortens() *brokenstore.PermitStore {
	var mu sync.Mutex
	expiries := make(map[[2]string]time.Time) // by resource and token
	return brokenstore.NewPermitStore(func(mem *memory.Store, f *brokenstore.PermitFuncs) {
		f.AcquirePermit = func(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
			fence, err := mem.AcquirePermit(ctx, resource, token, limit, ttl)
			if err == nil {
				mu.Lock()
				expiries[[2]string{resource, token}] = time.Now().Add(ttl)
				mu.Unlock()
			}
			return fence, err
		}
		f.ExtendPermit = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			key, until := [2]string{resource, token}, time.Now().Add(ttl)
			if until.Before(expiries[key]) {
				n, err := mem.Permits(ctx, resource) // held or not, as the store would answer
				if err == nil && n == 0 {
					return lock.ErrNotHeld
				}
				return err
			}
			if err := mem.ExtendPermit(ctx, resource, token, ttl); err != nil {
				return err
			}
			expiries[key] = until
			return nil
		}
	})
}
