package lock_test

// Black-box review of the documented input contract: "Bad input gets an
// error wrapping ErrInvalid naming what was wrong, before anything is sent
// to a store."

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memory"
)

func TestContractInvalidLockerCallsSendNothing(t *testing.T) {
	ctx := context.Background()
	s := newCounting("c")
	l := mustSingle(t, s, nil)
	m := mustMulti(t, []lock.Store{newCounting("a"), newCounting("b"), newCounting("d")}, nil)
	sem, err := lock.NewSemaphore(l, 3)
	wantNil(t, "NewSemaphore", err)
	rw, err := lock.NewRWLocker(l)
	wantNil(t, "NewRWLocker", err)
	lockers := map[string]lock.Locker{"single": l, "multi": m, "semaphore": sem, "reader": rw.Reader(), "writer": rw.Writer()}
	var nilCtx context.Context // nil: the bad input under test
	good := lock.Lock{Resource: "r", Token: "t", ValidUntil: time.Now().Add(time.Minute)}
	for name, lk := range lockers {
		t.Run(name, func(t *testing.T) {
			cases := []struct {
				call string
				run  func() error
			}{
				{`Lock(ctx, "", 1s)`, func() error { _, err := lk.Lock(ctx, "", time.Second); return err }},
				{`TryLock(ctx, "", 1s)`, func() error { _, err := lk.TryLock(ctx, "", time.Second); return err }},
				{`Lock(ctx, "r", 0)`, func() error { _, err := lk.Lock(ctx, "r", 0); return err }},
				{`Lock(ctx, "r", -1s)`, func() error { _, err := lk.Lock(ctx, "r", -time.Second); return err }},
				{`Lock(ctx, "r", MaxTTL+1)`, func() error { _, err := lk.Lock(ctx, "r", lock.MaxTTL+1); return err }},
				{`Lock(ctx, "r", 1ms)`, func() error { _, err := lk.Lock(ctx, "r", time.Millisecond); return err }},
				{`Lock(nil, "r", 1s)`, func() error { _, err := lk.Lock(nilCtx, "r", time.Second); return err }},
				{`TryLock(nil, "r", 1s)`, func() error { _, err := lk.TryLock(nilCtx, "r", time.Second); return err }},
				{`Lock(ctx, "r", 1s, WithRetry(Attempts: -2))`, func() error {
					_, err := lk.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: -2}))
					return err
				}},
				{`Lock(ctx, "r", 1s, WithRetry(Attempts: 3, Delay: 0))`, func() error {
					_, err := lk.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: 3}))
					return err
				}},
				{`Unlock(ctx, Lock{})`, func() error { return lk.Unlock(ctx, lock.Lock{}) }},
				{`Unlock(ctx, Lock{Resource: "r"})`, func() error { return lk.Unlock(ctx, lock.Lock{Resource: "r"}) }},
				{`Unlock(ctx, Lock{Token: "t"})`, func() error { return lk.Unlock(ctx, lock.Lock{Token: "t"}) }},
				{`Unlock(nil, good)`, func() error { return lk.Unlock(nilCtx, good) }},
				{`Extend(ctx, Lock{}, 1s)`, func() error { _, err := lk.Extend(ctx, lock.Lock{}, time.Second); return err }},
				{`Extend(ctx, good, 0)`, func() error { _, err := lk.Extend(ctx, good, 0); return err }},
				{`Extend(ctx, good, MaxTTL+1)`, func() error { _, err := lk.Extend(ctx, good, lock.MaxTTL+1); return err }},
				{`Extend(nil, good, 1s)`, func() error { _, err := lk.Extend(nilCtx, good, time.Second); return err }},
				{`IsLocked(ctx, "")`, func() error { _, err := lk.IsLocked(ctx, ""); return err }},
				{`IsLocked(nil, "r")`, func() error { _, err := lk.IsLocked(nilCtx, "r"); return err }},
			}
			for _, c := range cases {
				err := func() (err error) {
					defer func() {
						if p := recover(); p != nil {
							t.Errorf("%s panicked: %v; want an error matching ErrInvalid", c.call, p)
						}
					}()
					return c.run()
				}()
				if !errors.Is(err, lock.ErrInvalid) {
					t.Errorf("%s = %v; want an error matching ErrInvalid", c.call, err)
				}
				var le *lock.Error
				if err != nil && !errors.As(err, &le) {
					t.Errorf("%s = %T %v; want a *lock.Error", c.call, err, err)
				}
			}
			if n := s.calls.Load(); n != 0 {
				t.Errorf("%d store calls after invalid input; want none", n)
			}
		})
	}
}

func TestContractInvalidConstructors(t *testing.T) {
	m1, m2, m3 := memory.New(), memory.New(), memory.New()
	var nilMem *memory.Store
	l := mustSingle(t, m1, nil)
	cases := []struct {
		call string
		run  func() error
	}{
		{"NewSingle(nil)", func() error { _, err := lock.NewSingle(nil, nil); return err }},
		{"NewSingle((*memory.Store)(nil))", func() error { _, err := lock.NewSingle(nilMem, nil); return err }},
		{"NewSingle(Quorum: Majority)", func() error { _, err := lock.NewSingle(m1, &lock.Options{Quorum: quorum.Majority{}}); return err }},
		{"NewSingle(DriftFactor: 0.5)", func() error { _, err := lock.NewSingle(m1, &lock.Options{DriftFactor: 0.5}); return err }},
		{"NewSingle(DriftFactor: -0.1)", func() error { _, err := lock.NewSingle(m1, &lock.Options{DriftFactor: -0.1}); return err }},
		{"NewSingle(DriftFactor: NaN)", func() error { _, err := lock.NewSingle(m1, &lock.Options{DriftFactor: math.NaN()}); return err }},
		{"NewSingle(StoreTimeout: -1)", func() error { _, err := lock.NewSingle(m1, &lock.Options{StoreTimeout: -1}); return err }},
		{"NewSingle(LockDelay: -1)", func() error { _, err := lock.NewSingle(m1, &lock.Options{LockDelay: -1}); return err }},
		{"NewSingle(LockDelay: MaxTTL)", func() error { _, err := lock.NewSingle(m1, &lock.Options{LockDelay: lock.MaxTTL}); return err }},
		{`NewSingle(Holder: "a~b")`, func() error { _, err := lock.NewSingle(m1, &lock.Options{Holder: "a~b"}); return err }},
		{`NewSingle(Holder: "a\nb")`, func() error { _, err := lock.NewSingle(m1, &lock.Options{Holder: "a\nb"}); return err }},
		{`NewSingle(Holder: "\xff")`, func() error { _, err := lock.NewSingle(m1, &lock.Options{Holder: "\xff"}); return err }},
		{`NewSingle(Holder: 257 bytes)`, func() error {
			_, err := lock.NewSingle(m1, &lock.Options{Holder: strings.Repeat("h", lock.MaxHolderLen+1)})
			return err
		}},
		{"NewSingle(Retry: Attempts -2)", func() error {
			_, err := lock.NewSingle(m1, &lock.Options{Retry: &lock.Retry{Attempts: -2}})
			return err
		}},
		{"NewSingle(Retry: MaxDelay < Delay)", func() error {
			_, err := lock.NewSingle(m1, &lock.Options{Retry: &lock.Retry{Attempts: 2, Delay: time.Second, MaxDelay: time.Millisecond}})
			return err
		}},
		{"NewMulti(nil)", func() error { _, err := lock.NewMulti(nil, nil); return err }},
		{"NewMulti(m1, m1, m2)", func() error { _, err := lock.NewMulti([]lock.Store{m1, m1, m2}, nil); return err }},
		{"NewMulti(m1, nil, m2)", func() error { _, err := lock.NewMulti([]lock.Store{m1, nil, m2}, nil); return err }},
		{"NewMulti(3 stores, AtLeast(1))", func() error {
			_, err := lock.NewMulti([]lock.Store{m1, m2, m3}, &lock.Options{Quorum: quorum.AtLeast(1)})
			return err
		}},
		{"NewMulti(3 stores, AtLeast(4))", func() error {
			_, err := lock.NewMulti([]lock.Store{m1, m2, m3}, &lock.Options{Quorum: quorum.AtLeast(4)})
			return err
		}},
		{"NewSemaphore(nil, 2)", func() error { _, err := lock.NewSemaphore(nil, 2); return err }},
		{"NewSemaphore(l, 0)", func() error { _, err := lock.NewSemaphore(l, 0); return err }},
		{"NewSemaphore(l, -1)", func() error { _, err := lock.NewSemaphore(l, -1); return err }},
		{"NewRWLocker(nil)", func() error { _, err := lock.NewRWLocker(nil); return err }},
		{`NewElection(nil, "role", 1s)`, func() error { _, err := lock.NewElection(nil, "role", time.Second); return err }},
		{`NewElection(l, "", 1s)`, func() error { _, err := lock.NewElection(l, "", time.Second); return err }},
		{`NewElection(l, "role", 0)`, func() error { _, err := lock.NewElection(l, "role", 0); return err }},
		{`NewElection(l, "role", 1s, ExtendEvery(1s))`, func() error {
			_, err := lock.NewElection(l, "role", time.Second, lock.ExtendEvery(time.Second))
			return err
		}},
		{`NewElection(l, "role", 1s, MaxHold(-1))`, func() error {
			_, err := lock.NewElection(l, "role", time.Second, lock.MaxHold(-1))
			return err
		}},
	}
	for _, c := range cases {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s panicked: %v; want an error matching ErrInvalid", c.call, p)
				}
			}()
			return c.run()
		}()
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s = %v; want an error matching ErrInvalid", c.call, err)
		}
	}
	// A semaphore of plain locks refuses a limit above 1024.
	mm := mustMulti(t, []lock.Store{m1, m2, m3}, nil)
	if _, err := lock.NewSemaphore(mm, 1025); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("NewSemaphore(multi, 1025) = %v; want ErrInvalid", err)
	}
	noResidue(t, m1, m2, m3)
}

func TestContractInvalidRunCalls(t *testing.T) {
	ctx := context.Background()
	s := newCounting("c")
	l := mustSingle(t, s, nil)
	fn := func(context.Context, lock.Lock) error { t.Error("fn ran on invalid input"); return nil }
	cases := []struct {
		call string
		run  func() error
	}{
		{`Run(nil locker)`, func() error { return lock.Run(ctx, nil, "r", time.Second, fn) }},
		{`Run(nil fn)`, func() error { return lock.Run(ctx, l, "r", time.Second, nil) }},
		{`Run("", 1s)`, func() error { return lock.Run(ctx, l, "", time.Second, fn) }},
		{`Run("r", 0)`, func() error { return lock.Run(ctx, l, "r", 0, fn) }},
		{`Run(ExtendEvery(ttl))`, func() error { return lock.Run(ctx, l, "r", time.Second, fn, lock.ExtendEvery(time.Second)) }},
		{`Run(ExtendEvery(0.5ms))`, func() error { return lock.Run(ctx, l, "r", time.Second, fn, lock.ExtendEvery(time.Millisecond/2)) }},
		{`Run(MaxHold(-1))`, func() error { return lock.Run(ctx, l, "r", time.Second, fn, lock.MaxHold(-1)) }},
		{`RunOnce(nil fn)`, func() error { return lock.RunOnce(ctx, l, "r", time.Second, nil) }},
		{`RunOnce("", 1s)`, func() error { return lock.RunOnce(ctx, l, "", time.Second, fn) }},
		{`RunOnce(MinInterval(-1))`, func() error { return lock.RunOnce(ctx, l, "r", time.Second, fn, lock.MinInterval(-1)) }},
	}
	for _, c := range cases {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s panicked: %v; want an error matching ErrInvalid", c.call, p)
				}
			}()
			return c.run()
		}()
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s = %v; want an error matching ErrInvalid", c.call, err)
		}
	}
	if n := s.calls.Load(); n != 0 {
		t.Errorf("%d store calls after invalid input; want none", n)
	}
}

func TestContractFenceGuardZeroFence(t *testing.T) {
	var g lock.FenceGuard
	ran := false
	err := g.Do("k", 0, func() error { ran = true; return nil })
	if !errors.Is(err, lock.ErrInvalid) || ran {
		t.Errorf("Do(k, 0, write) = %v, ran %v; want ErrInvalid and write not run", err, ran)
	}
	wantNil(t, "Do(k, 5)", g.Do("k", 5, func() error { return nil }))
	wantNil(t, "Do(k, 5) again", g.Do("k", 5, func() error { return nil }))
	err = g.Do("k", 4, func() error { ran = true; return nil })
	if !errors.Is(err, lock.ErrStaleFence) || ran {
		t.Errorf("Do(k, 4) after 5 = %v, ran %v; want ErrStaleFence", err, ran)
	}
	wantNil(t, "Do(other, 1)", g.Do("other", 1, func() error { return nil }))
	werr := errors.New("write failed")
	if err := g.Do("k", 6, func() error { return werr }); err != werr && !errors.Is(err, werr) {
		t.Errorf("Do(k, 6, failing write) = %v; want write's error", err)
	}
}
