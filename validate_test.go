package lock_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

// Every bad input gets an error matching lock.ErrInvalid whose message
// names what was wrong, and nothing reaches a store.
func TestBadInputRefusedBeforeAnyStoreCall(t *testing.T) {
	ctx := context.Background()
	valid := lock.Lock{Resource: "r", Token: "t", ValidUntil: time.Now().Add(time.Second)}
	type lockerKind struct {
		name string
		make func(t *testing.T) (lock.Locker, []*counting)
	}
	kinds := []lockerKind{
		{"single", func(t *testing.T) (lock.Locker, []*counting) {
			c := newCounting("c")
			return mustSingle(t, c, nil), []*counting{c}
		}},
		{"multi", func(t *testing.T) (lock.Locker, []*counting) {
			cs := []*counting{newCounting("c0"), newCounting("c1"), newCounting("c2")}
			return mustMulti(t, []lock.Store{cs[0], cs[1], cs[2]}, nil), cs
		}},
	}
	cases := []struct {
		name  string
		call  func(l lock.Locker) error
		names string // the message must contain this
	}{
		{"Lock empty resource", func(l lock.Locker) error { _, err := l.Lock(ctx, "", time.Second); return err }, "empty resource"},
		{"TryLock empty resource", func(l lock.Locker) error { _, err := l.TryLock(ctx, "", time.Second); return err }, "empty resource"},
		{"IsLocked empty resource", func(l lock.Locker) error { _, err := l.IsLocked(ctx, ""); return err }, "empty resource"},
		{"zero TTL", func(l lock.Locker) error { _, err := l.Lock(ctx, "r", 0); return err }, "ttl is 0s"},
		{"negative TTL", func(l lock.Locker) error { _, err := l.TryLock(ctx, "r", -time.Second); return err }, "ttl is -1s"},
		{"overflowing TTL", func(l lock.Locker) error { _, err := l.Lock(ctx, "r", time.Duration(1<<62)); return err }, "want at most"},
		{"TTL shorter than drift", func(l lock.Locker) error { _, err := l.Lock(ctx, "r", time.Millisecond); return err }, "leaves no validity"},
		{"invalid retry", func(l lock.Locker) error {
			_, err := l.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: 3}))
			return err
		}, "Retry.Delay is 0"},
		{"negative retry attempts", func(l lock.Locker) error {
			_, err := l.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: -5, Delay: time.Millisecond}))
			return err
		}, "Retry.Attempts is -5"},
		{"backoff cap below delay", func(l lock.Locker) error {
			_, err := l.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: 1, Delay: time.Second, MaxDelay: time.Millisecond}))
			return err
		}, "MaxDelay"},
		{"Unlock zero Lock", func(l lock.Locker) error { return l.Unlock(ctx, lock.Lock{}) }, "zero Lock"},
		{"Unlock empty token", func(l lock.Locker) error { return l.Unlock(ctx, lock.Lock{Resource: "r"}) }, "empty token"},
		{"Unlock empty resource", func(l lock.Locker) error { return l.Unlock(ctx, lock.Lock{Token: "t"}) }, "empty resource"},
		{"Extend zero Lock", func(l lock.Locker) error { _, err := l.Extend(ctx, lock.Lock{}, time.Second); return err }, "zero Lock"},
		{"Extend zero TTL", func(l lock.Locker) error { _, err := l.Extend(ctx, valid, 0); return err }, "ttl is 0s"},
		{"Run nil function", func(l lock.Locker) error { return lock.Run(ctx, l, "r", time.Second, nil) }, "nil function"},
		{"Run ExtendEvery beyond TTL", func(l lock.Locker) error {
			return lock.Run(ctx, l, "r", time.Second, func(context.Context, lock.Lock) error { return nil }, lock.ExtendEvery(2*time.Second))
		}, "ExtendEvery"},
		{"Run ExtendEvery of 1ns", func(l lock.Locker) error {
			return lock.Run(ctx, l, "r", time.Second, func(context.Context, lock.Lock) error { return nil }, lock.ExtendEvery(time.Nanosecond))
		}, "ExtendEvery is 1ns"},
		{"retry delay of 1ns", func(l lock.Locker) error {
			_, err := l.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Nanosecond}))
			return err
		}, "Retry.Delay is 1ns"},
		{"Run negative MaxHold", func(l lock.Locker) error {
			return lock.Run(ctx, l, "r", time.Second, func(context.Context, lock.Lock) error { return nil }, lock.MaxHold(-1))
		}, "MaxHold"},
	}
	for _, k := range kinds {
		for _, c := range cases {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				l, stores := k.make(t)
				err := c.call(l)
				if !errors.Is(err, lock.ErrInvalid) {
					t.Fatalf("got %v; want an error matching lock.ErrInvalid", err)
				}
				if !strings.Contains(err.Error(), c.names) {
					t.Errorf("error %q does not say %q", err, c.names)
				}
				for _, s := range stores {
					if n := s.calls.Load(); n != 0 {
						t.Errorf("%s received %d calls; want none for bad input", s, n)
					}
				}
			})
		}
	}
}

func TestRunNilLocker(t *testing.T) {
	err := lock.Run(context.Background(), nil, "r", time.Second, func(context.Context, lock.Lock) error { return nil })
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "nil Locker") {
		t.Fatalf("Run(nil Locker) = %v; want ErrInvalid naming the nil Locker", err)
	}
}

func TestBadConfigurationRefused(t *testing.T) {
	a, b := memory.New(), memory.New()
	var nilStore *memory.Store
	cases := []struct {
		name  string
		make  func() error
		names string
	}{
		{"nil store", func() error { _, err := lock.NewSingle(nil, nil); return err }, "store is nil"},
		{"typed nil store", func() error { _, err := lock.NewSingle(nilStore, nil); return err }, "store is nil"},
		{"quorum on single", func() error { _, err := lock.NewSingle(a, &lock.Options{Quorum: quorum.Majority{}}); return err }, "Quorum"},
		{"negative drift", func() error { _, err := lock.NewSingle(a, &lock.Options{DriftFactor: -0.1}); return err }, "DriftFactor"},
		{"NaN drift", func() error { _, err := lock.NewSingle(a, &lock.Options{DriftFactor: math.NaN()}); return err }, "DriftFactor is NaN"},
		{"huge drift", func() error { _, err := lock.NewSingle(a, &lock.Options{DriftFactor: 0.5}); return err }, "DriftFactor"},
		{"negative store timeout", func() error { _, err := lock.NewSingle(a, &lock.Options{StoreTimeout: -1}); return err }, "StoreTimeout"},
		{"invalid default retry", func() error {
			_, err := lock.NewSingle(a, &lock.Options{Retry: &lock.Retry{Attempts: lock.Forever}})
			return err
		}, "Options.Retry.Delay"},
		{"no stores", func() error { _, err := lock.NewMulti(nil, nil); return err }, "no stores"},
		{"nil among stores", func() error { _, err := lock.NewMulti([]lock.Store{a, nil, b}, nil); return err }, "stores[1] is nil"},
		{"same store twice", func() error { _, err := lock.NewMulti([]lock.Store{a, b, a}, nil); return err }, "stores[0] and stores[2] are the same store"},
		{"quorum of a minority", func() error {
			_, err := lock.NewMulti([]lock.Store{a, b, memory.New(), memory.New(), memory.New()}, &lock.Options{Quorum: quorum.AtLeast(2)})
			return err
		}, "more than half"},
		{"half of an even count", func() error {
			_, err := lock.NewMulti([]lock.Store{a, b}, &lock.Options{Quorum: quorum.AtLeast(1)})
			return err
		}, "more than half"},
		{"quorum met by a minority only", func() error {
			_, err := lock.NewMulti([]lock.Store{a, b, memory.New(), memory.New(), memory.New()}, &lock.Options{Quorum: oddQuorum{1, 5}})
			return err
		}, "met by 1 of 5 stores"},
		{"quorum not monotonic", func() error {
			_, err := lock.NewMulti([]lock.Store{a, b, memory.New(), memory.New(), memory.New()}, &lock.Options{Quorum: oddQuorum{3, 5}})
			return err
		}, "met by 3 of 5 stores but not by 4"},
		{"empty Fixed tokens", func() error { _, err := lock.NewSingle(a, &lock.Options{Tokens: tokengen.Fixed("")}); return err }, "Options.Tokens"},
		{"quorum above the store count", func() error {
			_, err := lock.NewMulti([]lock.Store{a, b, memory.New()}, &lock.Options{Quorum: quorum.AtLeast(4)})
			return err
		}, "can never be met"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.make()
			if !errors.Is(err, lock.ErrInvalid) {
				t.Fatalf("got %v; want an error matching lock.ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.names) {
				t.Errorf("error %q does not say %q", err, c.names)
			}
		})
	}
}

// A store that cannot represent a resource refuses it through
// ResourceValidator before the locker sends anything.
type picky struct{ *counting }

func (picky) ValidateResource(r string) error {
	if len(r) > 8 {
		return errors.New("resource longer than 8 bytes")
	}
	return nil
}

func TestStoreValidatorConsulted(t *testing.T) {
	c := newCounting("picky")
	l := mustSingle(t, picky{c}, nil)
	_, err := l.Lock(context.Background(), "much-too-long", time.Second)
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "longer than 8 bytes") {
		t.Fatalf("Lock(long resource) = %v; want ErrInvalid with the store's reason", err)
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("store received %d calls; want none", n)
	}
	if _, err := l.Lock(context.Background(), "short", time.Second); err != nil {
		t.Fatalf("Lock(short resource) = %v; want nil", err)
	}
}

func TestClosedLockerRefusesNewLocks(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	l := mustSingle(t, m, nil)
	held, err := l.Lock(ctx, "a", time.Minute)
	wantNil(t, "Lock(a)", err)
	wantNil(t, "Shutdown()", l.Shutdown(ctx))
	noResidue(t, m)
	_, err = l.Lock(ctx, "b", time.Minute)
	wantIs(t, "Lock(b) after Shutdown", err, lock.ErrClosed)
	_, err = l.TryLock(ctx, "b", time.Minute)
	wantIs(t, "TryLock(b) after Shutdown", err, lock.ErrClosed)
	_, err = l.Extend(ctx, held, time.Minute)
	wantIs(t, "Extend(a) after Shutdown", err, lock.ErrClosed)
	wantIs(t, "Unlock(a) after Shutdown released it", l.Unlock(ctx, held), lock.ErrNotHeld)
}

// A nil context is bad input like any other: refused with ErrInvalid
// before any store call, instead of a panic deep in a store.
func TestNilContextRefused(t *testing.T) {
	valid := lock.Lock{Resource: "r", Token: "t", ValidUntil: time.Now().Add(time.Second)}
	var nilCtx context.Context
	calls := map[string]func(l lock.Locker) error{
		"Lock":      func(l lock.Locker) error { _, err := l.Lock(nilCtx, "r", time.Second); return err },
		"TryLock":   func(l lock.Locker) error { _, err := l.TryLock(nilCtx, "r", time.Second); return err },
		"IsLocked":  func(l lock.Locker) error { _, err := l.IsLocked(nilCtx, "r"); return err },
		"Unlock":    func(l lock.Locker) error { return l.Unlock(nilCtx, valid) },
		"Extend":    func(l lock.Locker) error { _, err := l.Extend(nilCtx, valid, time.Second); return err },
		"UnlockAll": func(l lock.Locker) error { return l.UnlockAll(nilCtx) },
		"Shutdown":  func(l lock.Locker) error { return l.Shutdown(nilCtx) },
		"Run": func(l lock.Locker) error {
			return lock.Run(nilCtx, l, "r", time.Second, func(context.Context, lock.Lock) error { return nil })
		},
	}
	for name, call := range calls {
		for _, multi := range []bool{false, true} {
			c := newCounting("c")
			var l lock.Locker = mustSingle(t, c, nil)
			if multi {
				l = mustMulti(t, []lock.Store{c, newCounting("d"), newCounting("e")}, nil)
			}
			err := call(l)
			if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "nil context") {
				t.Errorf("%s(nil ctx), multi=%v = %v; want ErrInvalid naming the nil context", name, multi, err)
			}
			if n := c.calls.Load(); n != 0 {
				t.Errorf("%s(nil ctx), multi=%v: the store received %d calls; want none", name, multi, n)
			}
			// A locker refusing Shutdown(nil) is not shut down.
			if _, err := l.TryLock(context.Background(), "after", time.Second); err != nil {
				t.Errorf("%s(nil ctx), multi=%v: TryLock afterwards = %v; want nil", name, multi, err)
			}
		}
	}
}

// Shutdown ends the Lock calls that wait for a held resource with
// ErrClosed, waits for the calls under way, and leaves no lock of the
// locker held once it returns — also a lock a waiting call would have
// taken after it returned.
func TestShutdownStopsWaitingLocks(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "multi"}[multi], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				ms, ls := memStores(3)
				newLocker := func() lock.Locker {
					if multi {
						return mustMulti(t, ls, nil)
					}
					return mustSingle(t, ls[0], nil)
				}
				holder, l := newLocker(), newLocker()
				held, err := holder.TryLock(ctx, "r", time.Hour)
				wantNil(t, "holder TryLock(r)", err)
				waiting := make(chan error, 1)
				go func() {
					_, err := l.Lock(ctx, "r", time.Minute)
					waiting <- err
				}()
				// A call under way when Shutdown begins: its store answers
				// 10ms later.
				for _, m := range ms {
					m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 10 * time.Millisecond, Times: memory.Always})
				}
				inFlight := make(chan error, 1)
				go func() {
					_, err := l.TryLock(ctx, "s", time.Minute)
					inFlight <- err
				}()
				time.Sleep(time.Millisecond)
				wantNil(t, "Shutdown()", l.Shutdown(ctx))
				wantIs(t, "Lock(r) waiting when Shutdown began", <-waiting, lock.ErrClosed)
				wantIs(t, "TryLock(s) under way when Shutdown began", <-inFlight, lock.ErrClosed)
				for _, m := range ms {
					m.ClearFaults()
				}
				for _, m := range ms {
					if got := m.Resources(); slices.Contains(got, "s") {
						t.Errorf("%s holds %q after Shutdown; want only the other locker's r", m, got)
					}
				}
				wantNil(t, "holder Unlock(r)", holder.Unlock(ctx, held))
				time.Sleep(time.Minute)
				noResidue(t, ms...)
			})
		})
	}
}

// oddQuorum is met by exactly the grant counts it lists: not monotonic.
type oddQuorum []int

func (q oddQuorum) Met(granted, _ int) bool { return slices.Contains(q, granted) }
