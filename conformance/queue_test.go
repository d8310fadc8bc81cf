package conformance_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/brokenstore"
)

// The controls of the rules of lock.Queuer. The memory store does not
// queue: each store is brokenstore's queuing store over it, broken one
// way.
func init() {
	for name, c := range map[string]control{
		"queue-unsupported-skips": {
			store: func() lock.Store { return brokenstore.QueueUnsupported() }, pass: true,
			wants: []string{
				"--- SKIP: TestControlChild/QueueHandoff ",
				"the store does not queue acquisitions as configured: AcquireQueued(r, b) = brokenstore: this store does not queue: unsupported operation",
			},
		},
		"queue-takes-unsupported": {
			store: func() lock.Store { return brokenstore.QueueTakesUnsupported() },
			rule:  "QueueFree", wants: []string{"AcquireQueued(r, a) = brokenstore: this store does not queue: unsupported operation, and then Release(r, its token) = nil; want ErrNotHeld: a store that cannot queue must send nothing, yet the call took the lock"},
		},
		"queue-drops-fence": {
			store: func() lock.Store { return brokenstore.QueueDropsFence() },
			rule:  "QueueFree", wants: []string{"AcquireQueued(fenced, y, fenced) after AcquireFenced(fenced, x) and Release(fenced, x) = fence 0; want a fence > "},
		},
		"queue-zero-wait-waits": {
			store: func() lock.Store { return brokenstore.QueueZeroWaitWaits() },
			rule:  "QueueNoWait", wants: []string{"AcquireQueued(r, b, wait 0s) still waiting 5.001s while a holds r; want one attempt, ErrNotAcquired at once: a wait of 0 or less never waits"},
		},
		"queue-wakes-without-lock": {
			store: func() lock.Store { return brokenstore.QueueWakesWithoutLock() },
			rule:  "QueueHandoff", wants: []string{"Acquire(r, c) while b holds r, handed it by Release(r, a) = nil; want ErrNotAcquired"},
		},
		"queue-retries-after-wake": {
			store: func() lock.Store { return brokenstore.QueueRetriesAfterWake(time.Millisecond) },
			rule:  "QueueNoBarging", wants: []string{"Acquire(r, c) right after Release(r, a), with b in line = nil; want ErrNotAcquired: the release hands r to b, and a caller that asks later must not take it first"},
		},
		"queue-last-first": {
			store: func() lock.Store { return brokenstore.QueueLastFirst() },
			rule:  "QueueOrder", wants: []string{"AcquireQueued(r, c) = nil after Release(r, a), while AcquireQueued(r, b), in line before it, waits on; want r handed to b first"},
		},
		"queue-ignores-wait": {
			store: func() lock.Store { return brokenstore.QueueIgnoresWait() },
			rule:  "QueueWaitRunsOut", wants: []string{"AcquireQueued(r, b, wait 100ms) still waiting 5.101s while a holds r; want ErrNotAcquired once its wait of 100ms runs out"},
		},
		"queue-keeps-departed": {
			store: func() lock.Store { return brokenstore.QueueKeepsDeparted() },
			rule:  "QueueWaitRunsOut", wants: []string{"Exists(r) = true after Release(r, a), though AcquireQueued(r, b, wait 100ms) had returned ErrNotAcquired; want false: the lock was handed to a caller that had left the line"},
		},
		"queue-keeps-departed-context": {
			store: func() lock.Store { return brokenstore.QueueKeepsDeparted() },
			rule:  "QueueHonoursContext", wants: []string{"Exists(r) = true 5.001s after Release(r, a), though AcquireQueued(r, b) had returned context.Canceled and Release(r, b) was made; want false"},
		},
		"queue-ignores-context": {
			store: func() lock.Store { return brokenstore.QueueIgnoresContext() },
			rule:  "QueueHonoursContext", wants: []string{"AcquireQueued(r, b) still waiting 5.001s after its context was canceled; want it to return context.Canceled"},
		},
		"queue-ignores-expiry": {
			store: func() lock.Store { return brokenstore.QueueIgnoresExpiry() },
			rule:  "QueueAfterExpiry", wants: []string{"AcquireQueued(r, b, 200ms) still waiting 202ms after it began; want r handed to it once a's lock (ttl 200ms) expired"},
		},
		"queue-ttl-from-call": {
			store: func() lock.Store { return brokenstore.QueueTTLFromCall() },
			rule:  "QueueAfterExpiry", wants: []string{"Exists(r) = false 5ms after a's lock could first expire and be handed to b with ttl 200ms (granularity 0s); want true: a handed lock's TTL counts from the handoff, not from the call"},
		},
		"queue-repeats-fence": {
			store: func() lock.Store { return brokenstore.QueueRepeatsFence() },
			rule:  "QueueFencesIncrease", wants: []string{"AcquireQueued(r, b, 200ms, fenced) handed r by Release(r, a) = fence 1; want a fence > 1"},
		},
	} {
		controls[name] = c
	}
}

// The queuing reference store passes every rule.
func TestQueueStorePasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return brokenstore.NewQueueStore() }, &conformance.Options{Synctest: true})
}
