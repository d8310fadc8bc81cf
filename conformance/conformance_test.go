package conformance_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// The kit must fail stores that break the contract. Each control below
// runs the suite, in a child process, on a store from package brokenstore
// that breaks one rule, and checks that the suite fails that rule with a
// message naming the call that broke it. A store that breaks nothing must
// pass (the Test…Passes functions at the end).

type control struct {
	store func() lock.Store
	rule  string   // the rule that must fail
	wants []string // what the output must say
	// realTime runs the suite on the real clock with the defaults of a
	// store that talks to a server, instead of on a fake clock.
	realTime bool
	// whole runs every rule, not only rule, and requires the last rule to
	// have run: the suite must not hang or abort after the broken rule.
	whole bool
	// pass makes the control a store that must pass: every rule runs, the
	// suite must succeed, and its output must say wants.
	pass bool
}

// restartable, in the child, are the restartable stores made by the
// factory; Options.Restart restarts them all.
var restartable struct {
	sync.Mutex
	stores []*brokenstore.Restartable
}

func newRestartable(forgetFences bool) lock.Store {
	s := brokenstore.NewRestartable(forgetFences)
	restartable.Lock()
	restartable.stores = append(restartable.stores, s)
	restartable.Unlock()
	return s
}

func restartAll(*testing.T) {
	restartable.Lock()
	defer restartable.Unlock()
	for _, s := range restartable.stores {
		s.Restart()
	}
}

var controls = map[string]control{
	"basic-skips": {
		store: func() lock.Store { return brokenstore.Basic(memory.New()) }, pass: true,
		wants: []string{"--- SKIP: TestControlChild/ExtendOwner ", "store does not implement lock.Extender", "--- SKIP: TestControlChild/StartOutcomes "},
	},
	"release-without-token-check": {
		store: func() lock.Store { return brokenstore.ReleaseWithoutTokenCheck() },
		rule:  "ReleaseWrongToken", wants: []string{"Release(r, wrongToken) = nil; want ErrNotHeld"},
	},
	"overwrite-held": {
		store: func() lock.Store { return brokenstore.OverwriteHeld() },
		rule:  "AcquireHeld", wants: []string{"Acquire(r, b) while a holds r = nil; want ErrNotAcquired"},
	},
	"extend-after-expiry": {
		store: func() lock.Store { return brokenstore.ExtendAfterExpiry() },
		rule:  "ExtendAfterExpiry", wants: []string{"Extend(r, a) after r expired = nil; want ErrNotHeld"},
	},
	"contention-on-timeout": {
		store: func() lock.Store { return brokenstore.ContentionOnTimeout() },
		rule:  "CanceledContext", wants: []string{
			"Acquire(held, a) with a canceled context = lock: not acquired: held by another owner; want context.Canceled, not ErrNotAcquired",
			"AcquireFenced(held, a) with a canceled context = lock: not acquired: held by another owner; want context.Canceled, not ErrNotAcquired",
		},
	},
	"ignores-ttl": {
		store: func() lock.Store { return brokenstore.IgnoresTTL() },
		rule:  "Expiry", wants: []string{"want false: the lock did not expire"},
	},
	"expires-early": {
		store: func() lock.Store { return brokenstore.ExpiresEarly(0.6) },
		rule:  "LongTTL", wants: []string{"after Acquire(r, a, 5.5s) (granularity 0s); want true until 5.5s: the lock expired early"},
	},
	"expires-early-real-time": {
		store: func() lock.Store { return brokenstore.ExpiresEarly(0.6) }, realTime: true,
		rule: "LongTTL", wants: []string{"after Acquire(r, a, 5.5s) (granularity 0s); want true until 5.5s: the lock expired early"},
	},
	"caps-ttl-real-time": {
		store: func() lock.Store { return brokenstore.CapsTTL(time.Second) }, realTime: true,
		rule: "LongTTL", wants: []string{"after Extend(r, a, 5.5s) of a lock taken for 200ms (granularity 0s); want true until 5.5s: the lock expired early"},
	},
	"truncates-ttl": {
		store: func() lock.Store { return brokenstore.TruncatesTTL() },
		rule:  "LongTTL", wants: []string{
			"s after Acquire(r, a, 5.5s) (granularity 0s); want true until 5.5s: the lock expired early",
			"s after Extend(r, a, 5.5s) of a lock taken for 200ms (granularity 0s); want true until 5.5s: the lock expired early",
			"after Acquire(r, a, 5.5s): TTL(r0) = 5s, true, nil; want 5.499s ≤ remaining ≤ 5.501s, true, nil",
		},
	},
	// Without a TTL reader, the lock's life alone tells: polling stops
	// only at its TTL less the granularity.
	"truncates-ttl-without-ttl-reader": {
		store: func() lock.Store { return brokenstore.Basic(brokenstore.TruncatesTTL()) },
		rule:  "LongTTL", wants: []string{"s after Acquire(r, a, 5.5s) (granularity 0s); want true until 5.5s: the lock expired early"},
	},
	"truncates-ttl-real-time": {
		store: func() lock.Store { return brokenstore.Basic(brokenstore.TruncatesTTL()) }, realTime: true,
		rule: "LongTTL", wants: []string{"after Acquire(r, a, 5.5s) (granularity 0s); want true until 5.5s: the lock expired early"},
	},
	"caps-long-ttl": {
		store: func() lock.Store { return brokenstore.CapsTTL(30 * 24 * time.Hour) },
		rule:  "MaxTTL", wants: []string{
			"after Acquire(r, a, 8760h0m0s): TTL(r0) = 720h0m0s, true, nil; want",
			"after Extend(r, a, 8760h0m0s) of a lock taken for",
			"the store does not keep the longest TTL a locker asks for",
		},
	},
	"refused-acquire-sets-ttl": {
		store: func() lock.Store { return brokenstore.RefusedAcquireSetsTTL() },
		rule:  "AcquireHeldKeepsExpiry", wants: []string{"the refused acquisition stretched a's lock"},
	},
	"refused-own-acquire-sets-ttl": {
		store: func() lock.Store { return brokenstore.RefusedOwnAcquireSetsTTL() },
		rule:  "AcquireHeldKeepsExpiry", wants: []string{"and Acquire(r, a, 30s) while a holds r with ttl 200ms was refused; want false: the refused acquisition stretched a's lock"},
	},
	"takes-over-near-expiry": {
		store: func() lock.Store { return brokenstore.TakesOverNearExpiry(50 * time.Millisecond) },
		rule:  "AcquireNearExpiry", wants: []string{"Acquire(r, b) answered 152ms after Acquire(r, a, 200ms) was sent = nil (granularity 0s); want ErrNotAcquired: a holds r until 200ms, and b took it over before then"},
	},
	"takes-over-near-expiry-real-time": {
		store: func() lock.Store { return brokenstore.TakesOverNearExpiry(50 * time.Millisecond) }, realTime: true,
		rule: "AcquireNearExpiry", wants: []string{"(granularity 0s); want ErrNotAcquired: a holds r until 200ms, and b took it over before then"},
	},
	"dead-context-succeeds": {
		store: func() lock.Store { return brokenstore.DeadContextSucceeds() },
		rule:  "CanceledContext", wants: []string{
			"Release(held, other) with a canceled context = nil; want context.Canceled: a failed call must not claim an outcome",
			"Extend(held, other) with a canceled context = nil; want context.Canceled: a failed call must not claim an outcome",
			"Extend(held, holder) with a canceled context = nil; want context.Canceled: its holder would believe the lock renewed",
			"Release(held, holder) with a canceled context = nil; want context.Canceled: its holder would believe the lock freed",
		},
	},
	"dead-context-succeeds-expired": {
		store: func() lock.Store { return brokenstore.DeadContextSucceeds() },
		rule:  "ExpiredDeadline", wants: []string{"Extend(held, holder) with an expired context = nil; want context.DeadlineExceeded: its holder would believe the lock renewed"},
	},
	"extend-never-shortens": {
		store: func() lock.Store { return brokenstore.ExtendNeverShortens() },
		rule:  "ExtendShortens", wants: []string{"want false: Extend did not shorten the lock"},
	},
	"ttl-held-after-release": {
		store: func() lock.Store { return brokenstore.TTLHeldAfterRelease() },
		rule:  "TTL", wants: []string{"TTL(r) after Release(r, a) = 1s, true, nil; want held = false, nil"},
	},
	"ttl-too-small": {
		store: func() lock.Store { return brokenstore.TTLTooSmall() },
		rule:  "TTL", wants: []string{"after Acquire(r, a, 30s): TTL(r) = 30ms, true, nil; want 29.999s ≤ remaining ≤ 30.001s, true, nil"},
	},
	"ttl-rounded-up": {
		store: func() lock.Store { return brokenstore.TTLRoundedUp() },
		rule:  "TTL", wants: []string{"after Acquire(expires, a, 200ms): TTL(expires) = 1s, true, nil; want 199ms ≤ remaining ≤ 201ms, true, nil"},
	},
	"ttl-as-set": {
		store: func() lock.Store { return brokenstore.TTLAsSet() },
		rule:  "TTL", wants: []string{"TTL(expires) = 200ms, true, nil 100ms after Acquire(expires, a, 200ms) returned (granularity 0s, tolerance 1ms); want at most 101ms: TTL is the time remaining, not the TTL set"},
	},
	"long-tokens-truncated": {
		store: func() lock.Store { return brokenstore.LongTokensTruncated(250) },
		rule:  "LongTokens", wants: []string{"Release(r, b) while a holds r, b differing from a in its last byte = nil; want ErrNotHeld"},
	},
	"folds-case": {
		store: func() lock.Store { return brokenstore.FoldsCase() },
		rule:  "UnusualResourceNames", wants: []string{`Acquire("Case", a) = ErrNotAcquired while only other names are held; want nil: the store maps it and "case", which differs from it only in case, to one lock`},
	},
	"trims-space": {
		store: func() lock.Store { return brokenstore.TrimsSpace() },
		rule:  "UnusualResourceNames", wants: []string{`Acquire(" x", a) = ErrNotAcquired while only other names are held; want nil: the store maps it and "x", which differs from it only in surrounding white space, to one lock`},
	},
	"truncates-long-names": {
		store: func() lock.Store { return brokenstore.Truncates(250) },
		rule:  "UnusualResourceNames", wants: []string{"which differs from it only after byte 250, to one lock"},
	},
	"leaks-goroutine": {
		store: func() lock.Store { return brokenstore.LeaksGoroutine() },
		rule:  "ReleaseOwner", whole: true,
		wants: []string{"the rule ended with goroutines blocked for good (synctest: deadlock: main bubble goroutine has exited but blocked goroutines remain)"},
	},
	"release-checks-then-deletes": {
		store: func() lock.Store { return brokenstore.ReleaseChecksThenDeletes(20 * time.Millisecond) },
		rule:  "ReleaseRacesExpiry", wants: []string{"want nil: a's Release, racing its expiry, deleted b's lock"},
	},
	"constant-fence": {
		store: func() lock.Store { return brokenstore.ConstantFence() },
		rule:  "FencingIncreases", wants: []string{"AcquireFenced(r, c) after Release(r, a) = fence 1; want a fence > 1"},
	},
	"fences-forget-expired": {
		store: func() lock.Store { return brokenstore.FencesForgetExpired() },
		rule:  "FencingIncreases", wants: []string{"AcquireFenced(r, d) after c's lock expired = fence 1; want a fence > 2"},
	},
	"fences-forget-restart": {
		store: func() lock.Store { return newRestartable(true) },
		rule:  "FencingAcrossRestart", wants: []string{"AcquireFenced(held, c) after a restart, with a holding held before it = fence 1; want a fence > 1"},
	},
	"fence-before-lock": {
		store: func() lock.Store { return brokenstore.FenceBeforeLock() },
		rule:  "FenceOrder", wants: []string{"want fences in the order holders take the lock"},
	},
	"raise-fence-ignored": {
		store: func() lock.Store { return brokenstore.RaiseFenceIgnored() },
		rule:  "RaiseFence", wants: []string{"AcquireFenced(r, c) after RaiseFence(r, 1001) = fence 2; want a fence > 1001"},
	},
	"tokens-fold-case": {
		store: func() lock.Store { return brokenstore.TokensFoldCase() },
		rule:  "LookalikeTokens", wants: []string{"differing from a only in case = nil; want ErrNotHeld"},
	},
	"fences-wrap": {
		store: func() lock.Store { return brokenstore.FencesWrap() },
		rule:  "RaiseFenceNearMax", wants: []string{"AcquireFenced(r, c) after RaiseFence(r, 2^64-2) = fence 0; want a fence > 18446744073709551615"},
	},
	"wait-returns-at-once": {
		store: func() lock.Store { return brokenstore.WaitReturnsAtOnce() },
		rule:  "WaitWakesOnRelease", whole: true,
		wants: []string{
			"WaitRelease(r) returned nil while a holds r; want it to block until r is released",
			"WaitRelease(wait-probe) = nil while a holds wait-probe; want it to block",
		},
	},
	"wait-wakes-on-any-release": {
		store: func() lock.Store { return brokenstore.WaitWakesOnAnyRelease() },
		rule:  "WaitIgnoresOtherResources", wants: []string{"WaitRelease(r) returned nil after Release(other, b), while a still holds r: it woke for another resource's release"},
	},
	"wait-wakes-on-extend": {
		store: func() lock.Store { return brokenstore.WaitWakesOnExtend() },
		rule:  "WaitIgnoresExtend", wants: []string{"WaitRelease(r) returned nil after Extend(r, a, 30s), while a still holds r: it woke for an extension"},
	},
	"wait-misses-release": {
		store: func() lock.Store { return brokenstore.WaitMissesRelease(time.Millisecond) },
		rule:  "WaitReleaseRace", wants: []string{"a release as the wait began was missed"},
	},
	"start-answers-twice": {
		store: func() lock.Store { return brokenstore.StartAnswersTwice() },
		rule:  "StartOutcomes", wants: []string{"called done 2 times; want exactly once"},
	},
	"start-ignores-holder": {
		store: func() lock.Store { return brokenstore.StartIgnoresHolder() },
		rule:  "StartOutcomes", wants: []string{"Start(acquire r, b) while a holds r = nil; want ErrNotAcquired"},
	},
	"start-ignores-deadline": {
		store: func() lock.Store { return brokenstore.StartIgnoresDeadline() },
		rule:  "StartExpiredDeadline", wants: []string{"Start(acquire held, a) with an expired context = lock: not acquired: held by another owner; want context.DeadlineExceeded"},
	},
	"start-batches-deadlines": {
		store: func() lock.Store { return brokenstore.StartBatchesDeadlines() },
		rule:  "StartOwnDeadline", wants: []string{"with a 30s deadline = context deadline exceeded, among calls with deadlines of a millisecond or so; want nil: a call must be answered by its own deadline, not another's"},
	},
	"start-ignores-raise": {
		store: func() lock.Store { return brokenstore.StartIgnoresRaise() },
		rule:  "StartRaiseFence", wants: []string{"AcquireFenced(r, b) after Start(raise fence r, 1001) = fence 2; want a fence > 1001"},
	},
	"start-drops-fence": {
		store: func() lock.Store { return brokenstore.StartDropsFence() },
		rule:  "StartFenced", wants: []string{"Start(acquire fenced r, a) = fence 0; want a fence > 0"},
	},
}

const controlEnv = "LOCKKIT_CONFORMANCE_CONTROL"

// TestControlChild is the child half of TestControls.
func TestControlChild(t *testing.T) {
	name := os.Getenv(controlEnv)
	if name == "" {
		t.Skip("run by TestControls")
	}
	c := controls[name]
	opts := &conformance.Options{Synctest: !c.realTime, Restart: restartAll}
	conformance.TestStore(t, func(t *testing.T) lock.Store { return c.store() }, opts)
}

func TestControls(t *testing.T) {
	for name, c := range controls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			run := "^TestControlChild$"
			if !c.whole && !c.pass {
				run += "/^" + c.rule + "$"
			}
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+run, "-test.v")
			cmd.Env = append(os.Environ(), controlEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			switch {
			case c.pass && err != nil:
				t.Fatalf("conformance suite on a %s store: err = %v; want success\n%s", name, err, out)
			case !c.pass && !errors.As(err, &exit):
				t.Fatalf("conformance suite on a %s store: err = %v; want a failing exit\n%s", name, err, out)
			}
			wants := c.wants
			if !c.pass {
				wants = append([]string{
					"--- FAIL: TestControlChild/" + c.rule + " ",
					"rule " + c.rule + " (conformance/", // why it matters, and where the rule is
				}, wants...)
			}
			if c.whole || c.pass {
				wants = append(wants, "TestControlChild/MultiLocker ") // the last rule ran
				if strings.Contains(string(out), "panic:") {
					t.Errorf("conformance suite on a %s store panicked; want every rule to run", name)
				}
			}
			for _, w := range wants {
				if !strings.Contains(string(out), w) {
					t.Errorf("conformance suite on a %s store: output lacks %q\n%s", name, w, out)
				}
			}
		})
	}
}

func TestMemoryStorePasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return memory.New() }, &conformance.Options{Synctest: true})
}

// A store that cannot keep long names apart and refuses them says so
// through lock.ResourceValidator, and passes.
func TestRefusingLongNamesPasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return brokenstore.TruncatesRefusingLong(250) }, &conformance.Options{Synctest: true})
}

// A store whose fences survive its restarts passes the restart rules.
func TestRestartableStorePasses(t *testing.T) {
	var stores []*brokenstore.Restartable
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		s := brokenstore.NewRestartable(false)
		stores = append(stores, s)
		return s
	}, &conformance.Options{Synctest: true, Restart: func(*testing.T) {
		for _, s := range stores {
			s.Restart()
		}
	}})
}
