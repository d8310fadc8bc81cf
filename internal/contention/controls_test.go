package contention_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/stores/memory"
)

// These tests run whole workloads on the memory store inside synctest
// bubbles: fake time, so seconds of workload take milliseconds and the
// interleavings do not depend on the machine's speed.

// single returns a NewLocker making one SingleLocker per client over s.
func single(s lock.Store) func(int) (lock.Locker, func(), error) {
	return func(int) (lock.Locker, func(), error) {
		l, err := lock.NewSingle(s, nil)
		return l, nil, err
	}
}

// memTTL reads a lock's remaining TTL on memory stores.
func memTTL(stores ...*memory.Store) func(context.Context, lock.Lock) ([]time.Duration, error) {
	return func(ctx context.Context, l lock.Lock) ([]time.Duration, error) {
		var ttls []time.Duration
		for _, s := range stores {
			d, held, err := s.TTL(ctx, l.Resource)
			if err != nil {
				return nil, err
			}
			if held {
				ttls = append(ttls, d)
			}
		}
		return ttls, nil
	}
}

// run runs cfg, reports it and checks that it leaked no goroutine.
func run(t *testing.T, scenario string, cfg contention.Config) (contention.Report, *contention.Result) {
	t.Helper()
	base := faultkit.Goroutines()
	res, err := contention.Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rep := res.Report(scenario, "memory")
	rep.LeakedGoroutines = len(base.Leaked(time.Second))
	faultkit.Emit(t, rep)
	return rep, res
}

// Correct setups, including ones under faults, must report no violation
// of any kind.
func TestSafeSetups(t *testing.T) {
	t.Run("single store", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := memory.New()
			rep, res := run(t, "control-safe-single", contention.Config{
				Workers: 4, NewLocker: single(store), Resources: []string{"a", "b"},
				TTL: 100 * time.Millisecond, Hold: 20 * time.Millisecond, Writes: 2,
				Duration: 2 * time.Second, ServerTTL: memTTL(store),
			})
			if bad := rep.Unsafe(); bad != "" {
				t.Errorf("correct setup reported %s", bad)
			}
			if rep.Acquisitions < 20 || rep.MaxHolders != 1 || rep.FencedWrites == 0 || rep.ValidityChecked == 0 || res.Writes == 0 {
				t.Errorf("the workload did not run as configured: %s (writes %d)", rep.Line(), res.Writes)
			}
		})
	})

	// Holders that outstay their TTL see their validity run out before
	// writing, skip the write, and find their lock gone at Unlock.
	t.Run("holds past the TTL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rep, res := run(t, "control-safe-hold-past-ttl", contention.Config{
				Workers: 3, NewLocker: single(memory.New()),
				TTL: 50 * time.Millisecond, Hold: 80 * time.Millisecond, Duration: time.Second,
			})
			if bad := rep.Unsafe(); bad != "" {
				t.Errorf("correct setup reported %s", bad)
			}
			notHeld := 0
			for _, op := range res.Recorder.Ops() {
				if op.Kind == contention.KindRelease && op.Outcome == contention.NotHeld {
					notHeld++
				}
			}
			if res.Skipped == 0 || res.Writes != 0 || notHeld == 0 || rep.Acquisitions == 0 {
				t.Errorf("want every write skipped and releases not held; got %d acquisitions, %d writes, %d skipped, %d releases not held",
					rep.Acquisitions, res.Writes, res.Skipped, notHeld)
			}
		})
	})

	// Redlock over three stores, one of them slow: the validity accounts
	// for the slow store and stays within a quorum's expiry.
	t.Run("redlock with a slow store", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ms := []*memory.Store{memory.New(memory.WithName("m0")), memory.New(memory.WithName("m1")), memory.New(memory.WithName("m2"))}
			ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 30 * time.Millisecond, Times: memory.Always})
			rep, _ := run(t, "control-safe-redlock-slow", contention.Config{
				Workers: 3,
				NewLocker: func(int) (lock.Locker, func(), error) {
					l, err := lock.NewMulti([]lock.Store{ms[0], ms[1], ms[2]}, nil)
					return l, nil, err
				},
				TTL: 200 * time.Millisecond, Hold: 20 * time.Millisecond, Duration: 2 * time.Second,
				ServerTTL: memTTL(ms...), Quorum: 2,
			})
			if bad := rep.Unsafe(); bad != "" {
				t.Errorf("correct setup reported %s", bad)
			}
			if rep.Acquisitions == 0 || rep.ValidityChecked == 0 {
				t.Errorf("the workload did not run: %s", rep.Line())
			}
		})
	})
}

// Each positive control runs a deliberately broken setup, which the
// checker must catch, next to its correct twin, which it must pass.
func TestPositiveControls(t *testing.T) {
	t.Run("release without token check", func(t *testing.T) {
		cfg := func(s lock.Store) contention.Config {
			return contention.Config{
				Workers: 3, NewLocker: single(s),
				TTL: 50 * time.Millisecond, Hold: 80 * time.Millisecond, Duration: time.Second,
			}
		}
		synctest.Test(t, func(t *testing.T) {
			broken, _ := run(t, "control-broken-careless-release", cfg(brokenstore.ReleaseWithoutTokenCheck()))
			if broken.Violations == 0 || broken.MaxHolders < 2 || broken.MaxOverlap <= 0 {
				t.Errorf("overlap checker blind to a release without token check: %s", broken.Line())
			}
			twin, _ := run(t, "control-twin-careless-release", cfg(memory.New()))
			if twin.Violations != 0 {
				t.Errorf("correct twin reported violations: %s", twin.Line())
			}
		})
	})

	t.Run("validity without elapsed time and drift", func(t *testing.T) {
		cfg := func(naive bool) contention.Config {
			s := &slowReply{Store: memory.New(), delay: 40 * time.Millisecond}
			return contention.Config{
				Workers: 3,
				NewLocker: func(int) (lock.Locker, func(), error) {
					l, err := lock.NewSingle(s, nil)
					if naive {
						return naiveValidity{l}, nil, err
					}
					return l, nil, err
				},
				TTL: 100 * time.Millisecond, Hold: 70 * time.Millisecond, Duration: 2 * time.Second,
				ServerTTL: memTTL(s.Store),
			}
		}
		synctest.Test(t, func(t *testing.T) {
			broken, _ := run(t, "control-broken-naive-validity", cfg(true))
			if broken.Violations == 0 {
				t.Errorf("overlap checker blind to inflated validity: %s", broken.Line())
			}
			if broken.ValidityViolations == 0 {
				t.Errorf("validity-vs-server checker blind to inflated validity: %s", broken.Line())
			}
			twin, _ := run(t, "control-twin-naive-validity", cfg(false))
			if bad := twin.Unsafe(); bad != "" {
				t.Errorf("correct twin reported %s: %s", bad, twin.Line())
			}
		})
	})

	t.Run("no lock at all", func(t *testing.T) {
		cfg := func(nl func(int) (lock.Locker, func(), error)) contention.Config {
			return contention.Config{
				Workers: 2, NewLocker: nl,
				TTL: 100 * time.Millisecond, Hold: 10 * time.Millisecond, Duration: 500 * time.Millisecond,
			}
		}
		synctest.Test(t, func(t *testing.T) {
			b := &bypass{}
			broken, _ := run(t, "control-broken-bypass", cfg(func(int) (lock.Locker, func(), error) { return b, nil, nil }))
			if broken.LostUpdates == 0 {
				t.Errorf("lost-update counter blind to unlocked writers: %s", broken.Line())
			}
			if broken.Violations == 0 {
				t.Errorf("overlap checker blind to unlocked writers: %s", broken.Line())
			}
			twin, _ := run(t, "control-twin-bypass", cfg(single(memory.New())))
			if bad := twin.Unsafe(); bad != "" {
				t.Errorf("correct twin reported %s: %s", bad, twin.Line())
			}
		})
	})

	// A holder stalls after its validity check, past its TTL, and then
	// writes: only fencing can refuse that write.
	t.Run("fences that do not increase", func(t *testing.T) {
		cfg := func(s lock.Store) contention.Config {
			var stalled atomic.Bool
			return contention.Config{
				Workers: 2, NewLocker: single(s),
				TTL: 50 * time.Millisecond, Hold: 10 * time.Millisecond, Writes: 2, Duration: time.Second,
				Pause: 5 * time.Millisecond, // let the other worker in
				BeforeWrite: func(context.Context, int, lock.Lock) {
					if stalled.CompareAndSwap(false, true) { // the first writer stalls
						time.Sleep(150 * time.Millisecond)
					}
				},
			}
		}
		synctest.Test(t, func(t *testing.T) {
			broken, _ := run(t, "control-broken-constant-fence", cfg(brokenstore.ConstantFence()))
			if broken.StaleAccepted == 0 {
				t.Errorf("fenced resource blind to fences that do not increase: %s", broken.Line())
			}
			twin, _ := run(t, "control-twin-constant-fence", cfg(memory.New()))
			if twin.StaleAccepted != 0 || twin.FencedRejected == 0 {
				t.Errorf("real fences: want the stalled write rejected and none stale accepted: %s", twin.Line())
			}
			if broken.Violations != 0 || twin.Violations != 0 {
				t.Errorf("a stalled holder writes outside its claim, not inside: want no overlap, got %d and %d", broken.Violations, twin.Violations)
			}
		})
	})
}

// A store failing during a fault window: its calls are unknown, never
// refused; the success rate during the window and the recovery after it
// are measured.
func TestFaultWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		reset := errors.New("connection reset")
		rep, res := run(t, "control-fault-window", contention.Config{
			Workers: 2, NewLocker: single(store), Retry: &lock.NoRetry, Pause: 5 * time.Millisecond,
			TTL: 100 * time.Millisecond, Hold: 10 * time.Millisecond, Duration: time.Second,
			Faults: []contention.Fault{{
				Name: "store fails", At: 300 * time.Millisecond, For: 200 * time.Millisecond,
				Inject: func() error {
					store.Inject(memory.Fault{Ops: memory.OpAcquire, Err: reset, Times: memory.Always})
					return nil
				},
				Heal: func() error { store.ClearFaults(); return nil },
			}},
		})
		if bad := rep.Unsafe(); bad != "" {
			t.Errorf("correct setup reported %s", bad)
		}
		failed := 0
		for _, op := range res.Recorder.Ops() {
			if errors.Is(op.Err, reset) {
				failed++
				if op.Outcome != contention.Unknown {
					t.Errorf("a failed store call was recorded as %v, want unknown", op.Outcome)
				}
			}
		}
		ws := res.Recorder.Windows()
		if len(ws) != 1 || ws[0].Start != 300*time.Millisecond || ws[0].End != 500*time.Millisecond {
			t.Errorf("fault windows = %+v, want one from 300ms to 500ms", ws)
		}
		if failed == 0 || rep.Unknown == 0 || !(rep.FaultSuccess < 0.5) {
			t.Errorf("want the calls during the fault to fail as unknown: %d failed; %s", failed, rep.Line())
		}
		// After healing, the workers' next attempt comes within their 5ms pause.
		if !rep.Recovered || rep.Recovery > 5*time.Millisecond {
			t.Errorf("recovery = %v (recovered %v), want within the 5ms pause", rep.Recovery, rep.Recovered)
		}
	})
}

// A fault that ends after the run's Duration (a failover slower than
// planned) leaves no time to see the recovery, unless the run awaits it.
func TestAwaitRecovery(t *testing.T) {
	for _, await := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("await=", await), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				rep, _ := run(t, "await-recovery", contention.Config{
					Workers: 2, NewLocker: single(store), Retry: &lock.NoRetry, Pause: 5 * time.Millisecond,
					TTL: 100 * time.Millisecond, Hold: 10 * time.Millisecond, Duration: time.Second,
					AwaitRecovery: await,
					Faults: []contention.Fault{{
						// It ends at 1203ms, past Duration, and off the workers' 5ms steps.
						Name: "slow failover", At: 500 * time.Millisecond,
						Inject: func() error {
							store.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errors.New("down"), Times: memory.Always})
							time.Sleep(703 * time.Millisecond)
							store.ClearFaults()
							return nil
						},
					}},
				})
				if await > 0 && (!rep.Recovered || rep.Recovery > 5*time.Millisecond) {
					t.Errorf("AwaitRecovery %v: recovery = %v (recovered %v); want the workers' next attempt, within their 5ms pause", await, rep.Recovery, rep.Recovered)
				}
				if await == 0 && rep.Recovered {
					t.Errorf("without AwaitRecovery: recovered after a fault that ended past Duration (%v); the run should have ended with the fault", rep.Recovery)
				}
			})
		})
	}
}

// A fault the run ends before is an error: a scenario that injected
// nothing proves nothing. Every injected fault is healed by the end.
func TestFaultsNotInjected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var injected, healed atomic.Int32
		_, err := contention.Run(t.Context(), contention.Config{
			Workers: 1, NewLocker: single(memory.New()),
			TTL: 100 * time.Millisecond, Hold: 10 * time.Millisecond, Duration: 200 * time.Millisecond,
			Faults: []contention.Fault{
				{Name: "early", At: 100 * time.Millisecond, For: time.Hour,
					Inject: func() error { injected.Add(1); return nil }, Heal: func() error { healed.Add(1); return nil }},
				{Name: "late", At: time.Hour, Inject: func() error { injected.Add(1); return nil }},
			},
		})
		if err == nil || !containsAll(err.Error(), `"late"`, "not injected") {
			t.Errorf("Run error = %v, want the late fault reported as not injected", err)
		}
		if injected.Load() != 1 || healed.Load() != 1 {
			t.Errorf("injected %d, healed %d; want the early fault injected and healed at the end of the run", injected.Load(), healed.Load())
		}
	})
}

func TestConfigValidation(t *testing.T) {
	nl := single(memory.New())
	for name, cfg := range map[string]contention.Config{
		"Workers":       {NewLocker: nl, TTL: time.Second, Hold: time.Millisecond, Duration: time.Second},
		"NewLocker":     {Workers: 1, TTL: time.Second, Hold: time.Millisecond, Duration: time.Second},
		"TTL":           {Workers: 1, NewLocker: nl, Hold: time.Millisecond, Duration: time.Second},
		"Hold":          {Workers: 1, NewLocker: nl, TTL: time.Second, Duration: time.Second},
		"would not end": {Workers: 1, NewLocker: nl, TTL: time.Second, Hold: time.Millisecond},
		"Inject is nil": {Workers: 1, NewLocker: nl, TTL: time.Second, Hold: time.Millisecond, Duration: time.Second,
			Faults: []contention.Fault{{Name: "x"}}},
	} {
		_, err := contention.Run(t.Context(), cfg)
		if !errors.Is(err, lock.ErrInvalid) || !containsAll(err.Error(), name) {
			t.Errorf("%s: Run error = %v, want lock.ErrInvalid naming %q", name, err, name)
		}
	}
	// A nil locker is refused, not run into a panic in a worker; the
	// clients already made are closed.
	var closed atomic.Int32
	_, err := contention.Run(t.Context(), contention.Config{
		Workers: 2, TTL: time.Second, Hold: time.Millisecond, Duration: time.Second,
		NewLocker: func(client int) (lock.Locker, func(), error) {
			if client == 1 {
				return nil, nil, nil
			}
			l, err := lock.NewSingle(memory.New(), nil)
			return l, func() { closed.Add(1) }, err
		},
	})
	if !errors.Is(err, lock.ErrInvalid) || !containsAll(err.Error(), "NewLocker(1)", "nil") || closed.Load() != 1 {
		t.Errorf("NewLocker returning a nil Locker: Run error = %v, %d clients closed; want lock.ErrInvalid naming NewLocker(1), client 0 closed", err, closed.Load())
	}
	// A locker refusing the run's input stops the run with its error.
	synctest.Test(t, func(t *testing.T) {
		_, err := contention.Run(t.Context(), contention.Config{
			Workers: 2, NewLocker: nl, Resources: []string{"ok"},
			TTL: time.Millisecond, Hold: time.Millisecond, Duration: time.Hour, // 1ms leaves no validity after drift
		})
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Run error = %v, want the locker's lock.ErrInvalid", err)
		}
	})
}

// A fault meant to last until the end of the run (For as long as a
// Duration can be) is injected, and healed when the run ends: its heal
// time must not wrap around to before its injection.
func TestFaultUntilTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var injected, healed atomic.Int32
		res, err := contention.Run(t.Context(), contention.Config{
			Workers: 1, NewLocker: single(memory.New()),
			TTL: 100 * time.Millisecond, Hold: 10 * time.Millisecond, Duration: 200 * time.Millisecond,
			Faults: []contention.Fault{{Name: "forever", At: 50 * time.Millisecond, For: math.MaxInt64,
				Inject: func() error { injected.Add(1); return nil }, Heal: func() error { healed.Add(1); return nil }}},
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if injected.Load() != 1 || healed.Load() != 1 {
			t.Errorf("fault with For = MaxInt64: injected %d, healed %d times; want 1 and 1 (healed at the end of the run)", injected.Load(), healed.Load())
		}
		if ws := res.Recorder.Windows(); len(ws) != 1 || ws[0].End < 200*time.Millisecond {
			t.Errorf("fault windows = %+v; want one, closed at the end of the run", ws)
		}
	})
}

// renamed is a locker whose locks name their resource differently from
// the name asked for (a namespacing wrapper, or a broken locker): the run
// keeps its counters by the resource it asked for, and does not crash.
type renamed struct{ lock.Locker }

func (r renamed) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...lock.LockOption) (lock.Lock, error) {
	l, err := r.Locker.Lock(ctx, resource, ttl, opts...)
	l.Resource = "ns/" + l.Resource
	return l, err
}

func (r renamed) Unlock(ctx context.Context, l lock.Lock) error {
	l.Resource = strings.TrimPrefix(l.Resource, "ns/")
	return r.Locker.Unlock(ctx, l)
}

func TestLockNamingAnotherResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		rep, res := run(t, "renamed-resource", contention.Config{
			Workers: 2, Resources: []string{"a"},
			NewLocker: func(int) (lock.Locker, func(), error) {
				l, err := lock.NewSingle(store, nil)
				return renamed{l}, nil, err
			},
			TTL: 100 * time.Millisecond, Hold: 10 * time.Millisecond, Duration: 200 * time.Millisecond,
		})
		if bad := rep.Unsafe(); bad != "" || res.Writes == 0 || res.Counters["a"].Writes() != int64(res.Writes) {
			t.Errorf("locks naming another resource: %s; %d writes, %d on resource a's counter; want safe, every write on a's counter",
				rep.Line(), res.Writes, res.Counters["a"].Writes())
		}
	})
}
