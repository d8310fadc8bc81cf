package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A StoreTimeout too long to add to a lock's validity is either refused
// as bad input, naming the option, or works: the locker still releases
// what it holds at UnlockAll. (It overflowed the MultiLocker's record of
// how long the stores may hold each lock, so UnlockAll forgot every lock
// at once and left it held in every store until its TTL.)
func TestHugeStoreTimeout(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "multi"}[multi], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				ms, ls := memStores(3)
				o := &lock.Options{StoreTimeout: math.MaxInt64}
				var l lock.Locker
				var err error
				if multi {
					l, err = lock.NewMulti(ls, o)
				} else {
					ms = ms[:1]
					l, err = lock.NewSingle(ls[0], o)
				}
				if err != nil {
					if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "StoreTimeout") {
						t.Fatalf("New(StoreTimeout: MaxInt64) = %v; want nil, or ErrInvalid naming Options.StoreTimeout", err)
					}
					return
				}
				_, err = l.TryLock(ctx, "r", time.Minute)
				wantNil(t, "TryLock(r)", err)
				wantNil(t, "UnlockAll()", l.UnlockAll(ctx))
				for _, m := range ms {
					if r := m.Resources(); len(r) > 0 {
						t.Errorf("%s holds %q after UnlockAll; want nothing: UnlockAll forgot the lock", m, r)
					}
				}
			})
		})
	}
}

// Run over a Semaphore or a read-write lock built on a Locker of another
// package cannot know the validity of its locks in advance (the locker
// under it may have any DriftFactor): an ExtendEvery the real validity
// cannot fit must be refused, or the lock extended in time. It was
// checked against the validity of the default options, accepted, and the
// lock lost at its first extension with every store healthy.
func TestRunOverDerivedOfForeignLocker(t *testing.T) {
	for _, kind := range []string{"semaphore", "writer"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				m := memory.New()
				// ttl 1s: validity 1s×0.7 − 2ms = 698ms; the defaults would say 988ms.
				under := foreignLocker{mustSingle(t, m, &lock.Options{DriftFactor: 0.3})}
				var l lock.Locker
				switch kind {
				case "semaphore":
					sem, err := lock.NewSemaphore(under, 2)
					wantNil(t, "NewSemaphore", err)
					l = sem
				case "writer":
					rw, err := lock.NewRWLocker(under)
					wantNil(t, "NewRWLocker", err)
					l = rw.Writer()
				}
				ran := false
				err := lock.Run(ctx, l, "r", time.Second, func(ctx context.Context, _ lock.Lock) error {
					ran = true
					time.Sleep(2 * time.Second) // several validities: Run must keep it
					return context.Cause(ctx)
				}, lock.ExtendEvery(900*time.Millisecond))
				switch {
				case !ran && errors.Is(err, lock.ErrInvalid):
					// Refused before anything was sent: fine.
				case errors.Is(err, lock.ErrLost):
					t.Errorf("Run(ttl 1s, ExtendEvery 900ms) = %v; want the lock kept (or the interval refused): the stores are healthy", err)
				case err != nil:
					t.Errorf("Run(ttl 1s, ExtendEvery 900ms) = %v; want nil, or ErrInvalid before fn runs", err)
				}
				noResidue(t, m)
			})
		})
	}
}

// errorOps are the operations that Error.Op's doc comment lists.
var errorOps = []string{"lock", "trylock", "unlock", "extend", "islocked", "holder", "permits", "unlockall", "shutdown", "run", "runonce", "new", "election", "campaign", "lead", "leader", "resign"}

// Whatever a store does (fails, refuses, fails after applying, answers
// late, fails with its own ErrClosed or DeadlineExceeded), every locker's
// error is an *Error whose Op is one the doc lists and whose Resource is
// the one called, matching one of the sentinels its method documents, and
// never both ErrNotAcquired and a failure; and nothing is left held.
func TestErrorShapeUnderFaults(t *testing.T) {
	storeInvalid := fmt.Errorf("%w: the store refuses it", lock.ErrInvalid)
	faults := map[string]memory.Fault{
		"reset":       {Err: errConnReset, Times: memory.Always},
		"reset-after": {Err: errConnReset, AfterApply: true, Times: memory.Always},
		"invalid":     {Err: storeInvalid, Times: memory.Always},
		"closed":      {Err: fmt.Errorf("client: %w", lock.ErrClosed), Times: memory.Always},
		"deadline":    {Err: context.DeadlineExceeded, Times: memory.Always},
		"slow":        {Delay: time.Second, Times: memory.Always},
		"in-flight":   {Delay: time.Second, InFlight: true, Times: memory.Always},
	}
	kinds := []string{"single", "multi", "semaphore", "multi-semaphore", "reader", "writer", "multi-reader", "multi-writer"}
	ops := []memory.Op{0, memory.OpAcquire, memory.OpRelease, memory.OpExtend, memory.OpExists, memory.OpRaiseFence}
	for _, kind := range kinds {
		for fname, f := range faults {
			for _, op := range ops {
				t.Run(fmt.Sprintf("%s/%s/op%d", kind, fname, op), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						ctx := t.Context()
						ms, ls := memStores(3)
						l := inputLocker(t, kind, ls)
						held, err := l.TryLock(ctx, "h", time.Minute)
						wantNil(t, "TryLock(h)", err)
						f.Ops = op
						for _, m := range ms {
							m.Inject(f)
						}
						check := func(call, resource string, err error, want ...error) {
							t.Helper()
							if err == nil {
								return
							}
							var e *lock.Error
							if !errors.As(err, &e) {
								t.Errorf("%s = %v (%T); want a *lock.Error", call, err, err)
								return
							}
							if !slices.Contains(errorOps, e.Op) || e.Resource != resource {
								t.Errorf("%s = %v: Op %q, Resource %q; want a documented Op, Resource %q", call, err, e.Op, e.Resource, resource)
							}
							if !slices.ContainsFunc(want, func(w error) bool { return errors.Is(err, w) }) {
								t.Errorf("%s = %v; want an error matching one of %v", call, err, want)
							}
							if errors.Is(err, lock.ErrNotAcquired) && errors.Is(err, lock.ErrUnavailable) {
								t.Errorf("%s = %v; matches both ErrNotAcquired and ErrUnavailable", call, err)
							}
						}
						_, err = l.TryLock(ctx, "a", time.Minute)
						check("TryLock(a)", "a", err, lock.ErrNotAcquired, lock.ErrUnavailable, lock.ErrInvalid)
						_, err = l.Lock(ctx, "b", time.Minute, lock.WithRetry(lock.Retry{Attempts: 3, Delay: 10 * time.Millisecond}))
						check("Lock(b)", "b", err, lock.ErrNotAcquired, lock.ErrUnavailable, lock.ErrInvalid)
						_, err = l.IsLocked(ctx, "h")
						check("IsLocked(h)", "h", err, lock.ErrUnavailable, lock.ErrInvalid)
						if s, ok := l.(*lock.Semaphore); ok {
							_, err = s.Permits(ctx, "h")
							check("Permits(h)", "h", err, lock.ErrUnavailable, lock.ErrInvalid)
						}
						got, err := l.Extend(ctx, held, time.Minute)
						check("Extend(h)", "h", err, lock.ErrNotHeld, lock.ErrUnavailable, lock.ErrInvalid)
						if err != nil && !got.IsZero() {
							t.Errorf("Extend(h) = %+v, %v; want the zero Lock with an error", got, err)
						}
						check("Unlock(h)", "h", l.Unlock(ctx, held), lock.ErrNotHeld, lock.ErrUnavailable, lock.ErrInvalid)
						check("UnlockAll()", "", l.UnlockAll(ctx), lock.ErrUnavailable, lock.ErrInvalid)
						for _, m := range ms {
							m.ClearFaults()
						}
						time.Sleep(2 * time.Minute) // every TTL and background release is over
						check("Shutdown()", "", l.Shutdown(ctx), lock.ErrUnavailable)
						noResidue(t, ms...)
					})
				})
			}
		}
	}
}

// inputLocker returns a locker of kind over ls (the first store only for
// single-store kinds).
func inputLocker(t *testing.T, kind string, ls []lock.Store) lock.Locker {
	t.Helper()
	base := lock.Locker(mustSingle(t, ls[0], nil))
	if strings.HasPrefix(kind, "multi") {
		base = mustMulti(t, ls, nil)
	}
	switch strings.TrimPrefix(kind, "multi-") {
	case "semaphore":
		return mustSemaphore(t, base, 2)
	case "reader", "writer":
		rw, err := lock.NewRWLocker(base)
		wantNil(t, "NewRWLocker", err)
		if strings.HasSuffix(kind, "reader") {
			return rw.Reader()
		}
		return rw.Writer()
	}
	return base
}

// namedRuleStore is a store with a name rule, ResourceValidator, and no
// permits of its own, so that semaphores and read-write locks are built
// on slots.
type namedRuleStore struct {
	lock.Store
	lock.Extender
}

func (namedRuleStore) ValidateResource(r string) error {
	if len(r) > 8 {
		return fmt.Errorf("%w: %q is longer than 8 bytes", lock.ErrInvalid, r)
	}
	return nil
}

// A name the store cannot hold is refused with ErrInvalid, naming the
// store's reason, by every method that takes a name or a Lock, before
// anything is sent; as are a semaphore's and a read-write lock's derived
// names.
func TestOverlongNamesRefusedEverywhere(t *testing.T) {
	ctx := context.Background()
	c := newCounting("c")
	s := mustSingle(t, namedRuleStore{c, c}, nil)
	sem := mustSemaphore(t, s, 3)
	rw, err := lock.NewRWLocker(s)
	wantNil(t, "NewRWLocker", err)
	long := "much-too-long"
	held := lock.Lock{Resource: long, Token: "0/3:t"}
	fn := func(context.Context, lock.Lock) error { t.Error("fn ran"); return nil }
	for name, call := range map[string]func() error{
		"Holder":           func() error { _, _, err := s.Holder(ctx, long); return err },
		"IsLocked":         func() error { _, err := s.IsLocked(ctx, long); return err },
		"Unlock":           func() error { return s.Unlock(ctx, held) },
		"Extend":           func() error { _, err := s.Extend(ctx, held, time.Second); return err },
		"sem.Permits":      func() error { _, err := sem.Permits(ctx, long); return err },
		"sem.IsLocked":     func() error { _, err := sem.IsLocked(ctx, long); return err },
		"sem.Unlock":       func() error { return sem.Unlock(ctx, held) },
		"sem.Extend":       func() error { _, err := sem.Extend(ctx, held, time.Second); return err },
		"sem.TryLock":      func() error { _, err := sem.TryLock(ctx, long, time.Second); return err },
		"sem.TryLock(8)":   func() error { _, err := sem.TryLock(ctx, "12345678", time.Second); return err }, // 12345678~permit0
		"reader.TryLock":   func() error { _, err := rw.Reader().TryLock(ctx, long, time.Second); return err },
		"writer.TryLock":   func() error { _, err := rw.Writer().TryLock(ctx, long, time.Second); return err },
		"reader.IsLocked":  func() error { _, err := rw.Reader().IsLocked(ctx, long); return err },
		"writer.IsLocked":  func() error { _, err := rw.Writer().IsLocked(ctx, long); return err },
		"writer.Unlock":    func() error { return rw.Writer().Unlock(ctx, held) },
		"reader.Extend":    func() error { _, err := rw.Reader().Extend(ctx, held, time.Second); return err },
		"NewElection":      func() error { _, err := lock.NewElection(s, long, time.Second); return err },
		"Run":              func() error { return lock.Run(ctx, s, long, time.Second, fn) },
		"RunOnce":          func() error { return lock.RunOnce(ctx, s, long, time.Second, fn) },
		"Run(semaphore)":   func() error { return lock.Run(ctx, sem, long, time.Second, fn) },
		"RunOnce(reader)":  func() error { return lock.RunOnce(ctx, rw.Reader(), long, time.Second, fn) },
		"NewElection(wrt)": func() error { _, err := lock.NewElection(rw.Writer(), long, time.Second); return err },
	} {
		before := c.calls.Load()
		err := call()
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "longer than 8 bytes") {
			t.Errorf("%s(%q) = %v; want ErrInvalid with the store's reason", name, long, err)
		}
		if n := c.calls.Load() - before; n != 0 {
			t.Errorf("%s(%q): %d store calls; want none", name, long, n)
		}
	}
}

// A call the stores lack the capability for is the one kind of locker
// error besides the context's that matches none of the sentinels, as the
// sentinels' doc comment says: it matches errors.ErrUnsupported, and
// leaves the lock as it was.
//
// In a bubble: the stores answer in goroutines of their own (basic has no
// Starter), and a MultiLocker's Unlock returns once a quorum released and
// a store timeout passed, so on real time a third release the scheduler
// runs more than 50ms late would still be on its way at noResidue.
func TestUnsupportedMatchesNoSentinel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ms, _ := memStores(3)
		bs := []lock.Store{basic{ms[0]}, basic{ms[1]}, basic{ms[2]}}
		for name, l := range map[string]lock.Locker{"single": mustSingle(t, bs[0], nil), "multi": mustMulti(t, bs, nil)} {
			held, err := l.TryLock(ctx, "r", time.Minute)
			wantNil(t, name+" TryLock(r)", err)
			got, err := l.Extend(ctx, held, time.Minute)
			wantError(t, name+" Extend(r) without Extender", err, "extend", "r", errors.ErrUnsupported)
			for _, s := range []error{lock.ErrNotAcquired, lock.ErrNotHeld, lock.ErrUnavailable, lock.ErrInvalid, lock.ErrClosed} {
				if errors.Is(err, s) {
					t.Errorf("%s Extend(r) without Extender = %v; matches %v too", name, err, s)
				}
			}
			if !got.IsZero() {
				t.Errorf("%s Extend(r) without Extender = %+v; want the zero Lock", name, got)
			}
			wantNil(t, name+" Unlock(r) after the unsupported Extend", l.Unlock(ctx, held))
		}
		noResidue(t, ms...)
	})
}
