package lock_test

// Black-box tests of FenceGuard, HolderOf, Options.Holder and token
// generators as the lockers use them, from the package documentation only.

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	lock "github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

// ---------------------------------------------------------------- FenceGuard

func TestSpecGuardFenceGuardZeroValueRuns(t *testing.T) {
	var g lock.FenceGuard
	ran := false
	if err := g.Do("k", 1, func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("zero FenceGuard.Do(k, 1, write) = %v, ran=%v; want nil, ran", err, ran)
	}
}

func TestSpecGuardFenceGuardEqualFenceAllowed(t *testing.T) {
	var g lock.FenceGuard
	_ = g.Do("k", 5, func() error { return nil })
	ran := false
	if err := g.Do("k", 5, func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("Do(k, 5) after Do(k, 5) = %v, ran=%v; want nil, ran (at least the highest)", err, ran)
	}
}

func TestSpecGuardFenceGuardHigherFenceAllowed(t *testing.T) {
	var g lock.FenceGuard
	_ = g.Do("k", 5, func() error { return nil })
	if err := g.Do("k", 6, func() error { return nil }); err != nil {
		t.Fatalf("Do(k, 6) after Do(k, 5) = %v; want nil", err)
	}
}

func TestSpecGuardFenceGuardLowerFenceStale(t *testing.T) {
	var g lock.FenceGuard
	_ = g.Do("k", 5, func() error { return nil })
	ran := false
	err := g.Do("k", 4, func() error { ran = true; return nil })
	if !errors.Is(err, lock.ErrStaleFence) {
		t.Fatalf("Do(k, 4) after Do(k, 5) = %v; want ErrStaleFence", err)
	}
	if ran {
		t.Fatalf("Do(k, 4) after Do(k, 5) ran its write; want it not run")
	}
}

func TestSpecGuardFenceGuardRemembersHighest(t *testing.T) {
	var g lock.FenceGuard
	_ = g.Do("k", 9, func() error { return nil })
	if err := g.Do("k", 3, func() error { return nil }); !errors.Is(err, lock.ErrStaleFence) {
		t.Fatalf("Do(k, 3) = %v; want ErrStaleFence", err)
	}
	// A refused write records nothing: 9 is still the highest.
	if err := g.Do("k", 8, func() error { return nil }); !errors.Is(err, lock.ErrStaleFence) {
		t.Fatalf("Do(k, 8) after 9 and a refused 3 = %v; want ErrStaleFence", err)
	}
	if err := g.Do("k", 9, func() error { return nil }); err != nil {
		t.Fatalf("Do(k, 9) after 9 = %v; want nil", err)
	}
}

func TestSpecGuardFenceGuardKeysIndependent(t *testing.T) {
	var g lock.FenceGuard
	_ = g.Do("a", 100, func() error { return nil })
	if err := g.Do("b", 1, func() error { return nil }); err != nil {
		t.Fatalf("Do(b, 1) after Do(a, 100) = %v; want nil (keys are independent)", err)
	}
}

func TestSpecGuardFenceGuardZeroFenceInvalid(t *testing.T) {
	var g lock.FenceGuard
	ran := false
	err := g.Do("k", 0, func() error { ran = true; return nil })
	if !errors.Is(err, lock.ErrInvalid) || ran {
		t.Fatalf("Do(k, 0, write) = %v, ran=%v; want ErrInvalid, not run", err, ran)
	}
	if err := g.Do("k", 1, func() error { return nil }); err != nil {
		t.Fatalf("Do(k, 1) after a refused fence 0 = %v; want nil (nothing recorded)", err)
	}
}

func TestSpecGuardFenceGuardNilWriteInvalidRecordsNothing(t *testing.T) {
	var g lock.FenceGuard
	if err := g.Do("k", 10, nil); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("Do(k, 10, nil) = %v; want ErrInvalid", err)
	}
	if err := g.Do("k", 5, func() error { return nil }); err != nil {
		t.Fatalf("Do(k, 5) after a refused Do(k, 10, nil) = %v; want nil (nothing recorded)", err)
	}
}

func TestSpecGuardFenceGuardReturnsWriteError(t *testing.T) {
	var g lock.FenceGuard
	boom := errors.New("boom")
	if err := g.Do("k", 1, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Do(k, 1, write returning boom) = %v; want boom", err)
	}
}

func TestSpecGuardFenceGuardWritesOneAtATime(t *testing.T) {
	// Not in a synctest bubble: goroutines blocked on a mutex are not
	// durably blocked there. Writers yield inside write instead of sleeping.
	var g lock.FenceGuard
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_ = g.Do("k", 7, func() error {
					n := inside.Add(1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					for range 20 {
						runtime.Gosched()
					}
					inside.Add(-1)
					return nil
				})
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Fatalf("writes to one key inside at once = %d; want 1", m)
	}
}

func TestSpecGuardFenceGuardRefusesExpiredHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		locker := mustSingle(t, memory.New(), nil)
		old, err := locker.TryLock(ctx, "acct", time.Minute)
		if err != nil {
			t.Fatalf("TryLock = %v", err)
		}
		time.Sleep(2 * time.Minute) // the old holder pauses past its TTL
		fresh, err := locker.TryLock(ctx, "acct", time.Minute)
		if err != nil {
			t.Fatalf("TryLock after expiry = %v", err)
		}
		if old.Fence == 0 || fresh.Fence <= old.Fence {
			t.Fatalf("fences = %d then %d; want non-zero and increasing", old.Fence, fresh.Fence)
		}
		var g lock.FenceGuard
		if err := g.Do("acct", fresh.Fence, func() error { return nil }); err != nil {
			t.Fatalf("Do(new holder's fence) = %v; want nil", err)
		}
		if err := g.Do("acct", old.Fence, func() error { return nil }); !errors.Is(err, lock.ErrStaleFence) {
			t.Fatalf("Do(expired holder's fence) = %v; want ErrStaleFence", err)
		}
	})
}

func TestSpecGuardNoFenceOption(t *testing.T) {
	l := mustSingle(t, memory.New(), &lock.Options{NoFence: true})
	got, err := l.TryLock(context.Background(), "r", time.Minute)
	if err != nil {
		t.Fatalf("TryLock = %v", err)
	}
	if got.Fence != 0 {
		t.Fatalf("Lock.Fence with Options.NoFence = %d; want 0", got.Fence)
	}
}

// ---------------------------------------------------------------- HolderOf

func TestSpecGuardHolderOf(t *testing.T) {
	for _, c := range []struct{ token, want string }{
		{"secret~host:1", "host:1"},
		{"a~b~c", "c"},
		{"plainsecret", ""},
		{"secret~", ""},
		{"", ""},
		{"~only", "only"},
	} {
		if got := lock.HolderOf(c.token); got != c.want {
			t.Errorf("HolderOf(%q) = %q; want %q", c.token, got, c.want)
		}
	}
}

func TestSpecGuardHolderOfRandomTokenEmpty(t *testing.T) {
	tok, err := tokengen.Random{}.Token()
	if err != nil {
		t.Fatal(err)
	}
	if got := lock.HolderOf(tok); got != "" {
		t.Fatalf("HolderOf(Random token %q) = %q; want \"\"", tok, got)
	}
}

func TestSpecGuardOptionsHolderInTokens(t *testing.T) {
	ctx := context.Background()
	l := mustSingle(t, memory.New(), &lock.Options{Holder: "host:42"})
	got, err := l.TryLock(ctx, "r", time.Minute)
	if err != nil {
		t.Fatalf("TryLock = %v", err)
	}
	if !strings.HasSuffix(got.Token, "~host:42") {
		t.Fatalf("Token = %q; want it to end in ~host:42", got.Token)
	}
	if h := lock.HolderOf(got.Token); h != "host:42" {
		t.Fatalf("HolderOf(Token) = %q; want host:42", h)
	}
	h, held, err := l.Holder(ctx, "r")
	if err != nil || !held || h != "host:42" {
		t.Fatalf("Holder(r) = %q, %v, %v; want host:42, true, nil", h, held, err)
	}
	if strings.Contains(h, strings.TrimSuffix(got.Token, "~host:42")) {
		t.Fatalf("Holder revealed the token's secret")
	}
}

func TestSpecGuardHolderFreeAndAnonymous(t *testing.T) {
	ctx := context.Background()
	l := mustSingle(t, memory.New(), nil)
	if h, held, err := l.Holder(ctx, "r"); err != nil || held || h != "" {
		t.Fatalf("Holder(free) = %q, %v, %v; want \"\", false, nil", h, held, err)
	}
	if _, err := l.TryLock(ctx, "r", time.Minute); err != nil {
		t.Fatal(err)
	}
	if h, held, err := l.Holder(ctx, "r"); err != nil || !held || h != "" {
		t.Fatalf("Holder(held without a holder name) = %q, %v, %v; want \"\", true, nil", h, held, err)
	}
}

func TestSpecGuardHolderUnsupportedWithoutHolderReader(t *testing.T) {
	l := mustSingle(t, bbPlainStore{memory.New()}, nil)
	if _, _, err := l.Holder(context.Background(), "r"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Holder on a store that is not a HolderReader = %v; want errors.ErrUnsupported", err)
	}
}

func TestSpecGuardOptionsHolderValidation(t *testing.T) {
	bad := map[string]string{
		"tilde":         "host~1",
		"newline":       "host\n1",
		"nbsp":          "host\u00a01",
		"too long":      strings.Repeat("h", lock.MaxHolderLen+1),
		"invalid UTF-8": "host\xff",
	}
	for name, h := range bad {
		if _, err := lock.NewSingle(memory.New(), &lock.Options{Holder: h}); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewSingle(Holder %s) = %v; want ErrInvalid", name, err)
		}
	}
	for _, h := range []string{strings.Repeat("h", lock.MaxHolderLen), "host 1 (pid 7)", "hôte-é"} {
		if _, err := lock.NewSingle(memory.New(), &lock.Options{Holder: h}); err != nil {
			t.Errorf("NewSingle(Holder %.20q…) = %v; want nil", h, err)
		}
	}
}

// ---------------------------------------------------------------- token generators in a locker

func TestSpecGuardFixedTokenUsed(t *testing.T) {
	l := mustSingle(t, memory.New(), &lock.Options{Tokens: tokengen.Fixed("me")})
	got, err := l.TryLock(context.Background(), "r", time.Minute)
	if err != nil || got.Token != "me" {
		t.Fatalf("TryLock with Fixed(\"me\") = %q, %v; want token \"me\"", got.Token, err)
	}
	// Locks are not re-entrant, even under one's own token.
	if _, err := l.TryLock(context.Background(), "r", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("second TryLock under the same Fixed token = %v; want ErrNotAcquired", err)
	}
}

type sxTokens struct {
	tok string
	err error
}

func (s sxTokens) Token() (string, error) { return s.tok, s.err }

func TestSpecGuardEmptyTokenInvalid(t *testing.T) {
	l := mustSingle(t, memory.New(), &lock.Options{Tokens: sxTokens{}})
	if _, err := l.TryLock(context.Background(), "r", time.Minute); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("TryLock with a generator returning \"\" = %v; want ErrInvalid", err)
	}
}

func TestSpecGuardTokenErrorUnavailable(t *testing.T) {
	boom := errors.New("entropy gone")
	l := mustSingle(t, memory.New(), &lock.Options{Tokens: sxTokens{err: boom}})
	_, err := l.TryLock(context.Background(), "r", time.Minute)
	if !errors.Is(err, lock.ErrUnavailable) || !errors.Is(err, boom) {
		t.Fatalf("TryLock with a failing generator = %v; want ErrUnavailable with the generator's error in the chain", err)
	}
}
