package lock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// rvRetryHook records the start time and delay of each retry.
type rvRetryHook struct {
	mu     sync.Mutex
	at     []time.Time
	delays []time.Duration
	wait   []bool
}

func (h *rvRetryHook) Observe(_ context.Context, e lock.Event) {
	if e.Kind == lock.EventRetry {
		h.mu.Lock()
		h.at = append(h.at, time.Now())
		h.delays = append(h.delays, e.Delay)
		h.wait = append(h.wait, e.Waiting)
		h.mu.Unlock()
	}
}

// TestContractDefaultRetryPolls: on a store that cannot notify, the default
// policy "polls every 5–10ms for the first quarter of a second of a wait,
// and backs off only after that, doubling the delay every quarter of a
// second up to 500ms"; every wait is drawn from [d/2, d].
func TestContractDefaultRetryPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		h := &rvRetryHook{}
		l := mustSingle(t, basic{m}, &lock.Options{Hook: h})
		_, err := mustSingle(t, m, nil).TryLock(ctx, "r", 5*time.Second)
		wantNil(t, "TryLock", err)
		start := time.Now()
		_, err = l.Lock(ctx, "r", time.Second)
		wantNil(t, "Lock after the holder's expiry", err)
		if len(h.delays) < 25 {
			t.Fatalf("%d retries in 5s; want polling", len(h.delays))
		}
		for i, d := range h.delays {
			since := h.at[i].Sub(start)
			if h.wait[i] {
				t.Errorf("retry %d reported Waiting on a store without Waiter", i)
			}
			switch {
			case since < 250*time.Millisecond && (d < 5*time.Millisecond || d > 10*time.Millisecond):
				t.Errorf("retry at %v: delay %v; want 5–10ms in the first quarter second", since, d)
			case d > 500*time.Millisecond:
				t.Errorf("retry at %v: delay %v; want at most 500ms", since, d)
			case since > 3*time.Second && d < 250*time.Millisecond:
				t.Errorf("retry at %v: delay %v; want backed off to 250–500ms", since, d)
			}
		}
	})
}

// TestContractExplicitRetryBackoff: Retry{Delay: 10ms, MaxDelay: 80ms} on a
// store without Waiter doubles the wait after each attempt up to MaxDelay,
// each drawn from [d/2, d].
func TestContractExplicitRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memory.New()
		h := &rvRetryHook{}
		l := mustSingle(t, basic{m}, &lock.Options{Hook: h})
		_, err := mustSingle(t, m, nil).TryLock(ctx, "r", time.Hour)
		wantNil(t, "TryLock", err)
		_, err = l.Lock(ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: 7, Delay: 10 * time.Millisecond, MaxDelay: 80 * time.Millisecond}))
		wantIs(t, "Lock", err, lock.ErrNotAcquired)
		if len(h.at) != 6 {
			t.Fatalf("%d retries; want 6 (7 attempts)", len(h.at))
		}
		caps := []time.Duration{10, 20, 40, 80, 80, 80}
		for i := range h.at {
			want := caps[i] * time.Millisecond
			var slept time.Duration
			if i+1 < len(h.at) {
				slept = h.at[i+1].Sub(h.at[i])
			} else {
				continue
			}
			if slept < want/2 || slept > want {
				t.Errorf("wait %d: %v; want within [%v, %v]", i, slept, want/2, want)
			}
		}
	})
}

// TestContractCanceledContextEverywhere: the read-only calls honour their
// context too.
func TestContractCanceledContextEverywhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		ms, ls := memStores(3)
		single := mustSingle(t, m, nil)
		multi := mustMulti(t, ls, nil)
		k, err := single.TryLock(context.Background(), "r", time.Minute)
		wantNil(t, "TryLock", err)
		_, err = multi.TryLock(context.Background(), "r", time.Minute)
		wantNil(t, "TryLock", err)
		sem, _ := lock.NewSemaphore(single, 2)
		msem, _ := lock.NewSemaphore(multi, 2)
		e, _ := lock.NewElection(single, "r", time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for name, f := range map[string]func() error{
			"single.Holder":   func() error { _, _, err := single.Holder(ctx, "r"); return err },
			"multi.Holder":    func() error { _, _, err := multi.Holder(ctx, "r"); return err },
			"multi.IsLocked":  func() error { _, err := multi.IsLocked(ctx, "r"); return err },
			"sem.Permits":     func() error { _, err := sem.Permits(ctx, "p"); return err },
			"msem.Permits":    func() error { _, err := msem.Permits(ctx, "p"); return err },
			"sem.IsLocked":    func() error { _, err := sem.IsLocked(ctx, "p"); return err },
			"msem.TryLock":    func() error { _, err := msem.TryLock(ctx, "p", time.Minute); return err },
			"sem.Lock":        func() error { _, err := sem.Lock(ctx, "p", time.Minute); return err },
			"Election.Leader": func() error { _, err := e.Leader(ctx); return err },
			"Campaign":        func() error { _, err := e.Campaign(ctx); return err },
			"Run": func() error {
				return lock.Run(ctx, single, "x", time.Minute, func(context.Context, lock.Lock) error { return nil })
			},
			"RunOnce": func() error {
				return lock.RunOnce(ctx, single, "x", time.Minute, func(context.Context, lock.Lock) error { return nil })
			},
		} {
			err := f()
			wantIs(t, name+" with a canceled context", err, context.Canceled)
		}
		wantNil(t, "Unlock", single.Unlock(context.Background(), k))
		wantNil(t, "UnlockAll", multi.UnlockAll(context.Background()))
		noResidue(t, m)
		noResidue(t, ms...)
	})
}

// Options.Retry is the policy of every Lock that passes none (copied at
// construction); a call's WithRetry replaces it; TryLock makes one
// attempt whatever the policy; Attempts 0 and 1 make one attempt.
func TestContractLockerRetryPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recording{basic: basic{memory.New()}}
		holdElsewhere(t, r, "res", time.Hour)
		policy := lock.Retry{Attempts: 3, Delay: time.Millisecond}
		l := mustSingle(t, r, &lock.Options{Retry: &policy})
		policy.Attempts = 10 // after construction: no effect
		attempts := func(call string, f func() error) {
			t.Helper()
			r.mu.Lock()
			r.times = nil
			r.mu.Unlock()
			wantIs(t, call, f(), lock.ErrNotAcquired)
		}
		count := func() int {
			r.mu.Lock()
			defer r.mu.Unlock()
			return len(r.times)
		}
		for _, c := range []struct {
			call string
			want int
			f    func() error
		}{
			{"Lock(res) with Options.Retry{Attempts: 3}", 3, func() error {
				_, err := l.Lock(t.Context(), "res", time.Second)
				return err
			}},
			{"TryLock(res) with Options.Retry{Attempts: 3}", 1, func() error {
				_, err := l.TryLock(t.Context(), "res", time.Second)
				return err
			}},
			{"Lock(res, WithRetry(Attempts: 5))", 5, func() error {
				_, err := l.Lock(t.Context(), "res", time.Second, lock.WithRetry(lock.Retry{Attempts: 5, Delay: time.Millisecond}))
				return err
			}},
			{"Lock(res, WithRetry(NoRetry))", 1, func() error {
				_, err := l.Lock(t.Context(), "res", time.Second, lock.WithRetry(lock.NoRetry))
				return err
			}},
			{"Lock(res, WithRetry(Attempts: 1, Delay: 1ms))", 1, func() error {
				_, err := l.Lock(t.Context(), "res", time.Second, lock.WithRetry(lock.Retry{Attempts: 1, Delay: time.Millisecond}))
				return err
			}},
		} {
			attempts(c.call, c.f)
			if got := count(); got != c.want {
				t.Errorf("%s made %d attempts; want %d", c.call, got, c.want)
			}
		}
	})
}

// MaxHold, ExtendEvery and MinInterval are Run's and RunOnce's options:
// Lock ignores them, whatever their values, and takes the lock as
// without them.
func TestContractLockIgnoresRunOptions(t *testing.T) {
	rvLockers(t, nil, func(t *testing.T, l lock.Locker, ms []*memory.Store) {
		ctx := t.Context()
		k, err := l.Lock(ctx, "r", time.Minute, lock.MaxHold(-time.Second), lock.ExtendEvery(-time.Second), lock.MinInterval(-time.Second))
		wantNil(t, "Lock(r, MaxHold(-1s), ExtendEvery(-1s), MinInterval(-1s))", err)
		if want := time.Now().Add(time.Minute - 600*time.Millisecond - 2*time.Millisecond); !k.ValidUntil.Equal(want) {
			t.Errorf("Lock(r, Run's options).ValidUntil = now+%v; want now+%v, as without them", time.Until(k.ValidUntil), time.Until(want))
		}
		wantNil(t, "Unlock(r)", l.Unlock(ctx, k))
		noResidue(t, ms...)
	})
}

// tokenLog is a store without optional capabilities that logs the token
// of every acquisition.
type tokenLog struct {
	basic
	mu     sync.Mutex
	tokens []string
}

func (s *tokenLog) Acquire(ctx context.Context, res, tok string, ttl time.Duration) error {
	s.mu.Lock()
	s.tokens = append(s.tokens, tok)
	s.mu.Unlock()
	return s.basic.Acquire(ctx, res, tok, ttl)
}

func (s *tokenLog) logged() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

// Every attempt uses a fresh token, sent to every store of a
// MultiLocker: a retry never finds "its own" key of an earlier attempt.
func TestContractEachAttemptFreshToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		logs := make([]*tokenLog, 3)
		stores := make([]lock.Store, 3)
		for i := range logs {
			logs[i] = &tokenLog{basic: basic{memory.New()}}
			stores[i] = logs[i]
			holdElsewhere(t, logs[i].s, "r", time.Hour)
		}
		retry := lock.WithRetry(lock.Retry{Attempts: 3, Delay: time.Millisecond})
		_, err := mustSingle(t, logs[0], nil).Lock(ctx, "r", time.Second, retry)
		wantIs(t, "SingleLocker Lock(r) held elsewhere", err, lock.ErrNotAcquired)
		single := logs[0].logged()
		if len(single) != 3 || single[0] == single[1] || single[1] == single[2] || single[0] == single[2] {
			t.Errorf("SingleLocker: 3 attempts sent tokens %q; want 3 distinct ones", single)
		}

		for _, l := range logs {
			l.mu.Lock()
			l.tokens = nil
			l.mu.Unlock()
		}
		_, err = mustMulti(t, stores, nil).Lock(ctx, "r", time.Second, retry)
		wantIs(t, "MultiLocker Lock(r) held elsewhere", err, lock.ErrNotAcquired)
		synctest.Wait() // for the calls of stores that answered after the decision
		seen := map[string]int{}
		for i, l := range logs {
			got := l.logged()
			if len(got) != 3 {
				t.Fatalf("MultiLocker: store %d got %d acquisitions; want one per attempt, 3", i, len(got))
			}
			for _, tok := range got {
				seen[tok]++
			}
		}
		if len(seen) != 3 {
			t.Errorf("MultiLocker: 3 attempts over 3 stores sent %d distinct tokens (%v); want 3, each to every store", len(seen), seen)
		}
		for tok, n := range seen {
			if n != 3 {
				t.Errorf("MultiLocker: token %q went to %d stores; want all 3", tok, n)
			}
		}
	})
}
