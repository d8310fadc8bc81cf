package lock_test

// Black-box specification tests of retry policies and Hook events.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// ---- Retry ----

func TestSpecHkDefaultRetryValues(t *testing.T) {
	d := lock.DefaultRetry
	if d.Attempts != lock.Forever || d.Delay != 10*time.Millisecond || d.MaxDelay != 500*time.Millisecond {
		t.Errorf("DefaultRetry = %+v; want Attempts Forever, Delay 10ms, MaxDelay 500ms", d)
	}
	if lock.Forever != -1 {
		t.Errorf("Forever = %d; want -1", lock.Forever)
	}
	if n := lock.NoRetry; n.Attempts != 0 || n.Delay != 0 || n.MaxDelay != 0 {
		t.Errorf("NoRetry = %+v; want zero Retry", n)
	}
}

// bbAttempts runs Lock on a held resource with opts and returns the number
// of EventAttempt events, the recorder and the error.
func bbAttempts(t *testing.T, st lock.Store, o lock.Options, opts ...lock.LockOption) (int, *bbRecorder, error) {
	t.Helper()
	ctx := context.Background()
	rec := &bbRecorder{}
	o.Hook = rec
	holder := mustSingle(t, st, nil)
	if _, err := holder.TryLock(ctx, "r", time.Hour); err != nil {
		t.Fatal(err)
	}
	a := mustSingle(t, st, &o)
	_, err := a.Lock(ctx, "r", bbTTL, opts...)
	return len(rec.ofKind(lock.EventAttempt)), rec, err
}

func TestSpecHkRetryAttemptsCount(t *testing.T) {
	for _, tc := range []struct {
		r    lock.Retry
		want int
	}{
		{lock.Retry{Attempts: 3, Delay: 10 * time.Millisecond}, 3},
		{lock.Retry{Attempts: 5, Delay: time.Millisecond, MaxDelay: 8 * time.Millisecond}, 5},
		{lock.Retry{Attempts: 1, Delay: 10 * time.Millisecond}, 1},
		{lock.Retry{Attempts: 0}, 1},
		{lock.NoRetry, 1},
	} {
		for _, st := range []func() lock.Store{
			func() lock.Store { return memory.New() },
			func() lock.Store { return bbPlainStore{memory.New()} },
		} {
			synctest.Test(t, func(t *testing.T) {
				s := st()
				n, rec, err := bbAttempts(t, s, lock.Options{}, lock.WithRetry(tc.r))
				if !errors.Is(err, lock.ErrNotAcquired) {
					t.Errorf("Lock(%+v) on held = %v; want ErrNotAcquired", tc.r, err)
				}
				if n != tc.want {
					t.Errorf("Lock(%+v) on %T made %d attempts; want %d", tc.r, s, n, tc.want)
				}
				na := rec.ofKind(lock.EventNotAcquired)
				if len(na) != 1 || na[0].Attempt != tc.want || !errors.Is(na[0].Err, lock.ErrNotAcquired) {
					t.Errorf("EventNotAcquired = %+v; want one with Attempt %d, Err ErrNotAcquired", na, tc.want)
				}
				if r := rec.ofKind(lock.EventRetry); len(r) != tc.want-1 {
					t.Errorf("%d EventRetry; want %d", len(r), tc.want-1)
				}
			})
		}
	}
}

func TestSpecHkRetryFromOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _, err := bbAttempts(t, memory.New(), lock.Options{Retry: &lock.Retry{Attempts: 4, Delay: time.Millisecond}})
		if !errors.Is(err, lock.ErrNotAcquired) || n != 4 {
			t.Errorf("Lock with Options.Retry{Attempts:4} = %d attempts, %v; want 4, ErrNotAcquired", n, err)
		}
		// WithRetry replaces Options.Retry.
		n, _, err = bbAttempts(t, memory.New(), lock.Options{Retry: &lock.Retry{Attempts: 4, Delay: time.Millisecond}}, lock.WithRetry(lock.Retry{Attempts: 2, Delay: time.Millisecond}))
		if !errors.Is(err, lock.ErrNotAcquired) || n != 2 {
			t.Errorf("WithRetry{Attempts:2} over Options.Retry{4} = %d attempts, %v; want 2", n, err)
		}
	})
}

func TestSpecHkTryLockOneAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		rec := &bbRecorder{}
		mustSingle(t, st, nil).TryLock(ctx, "r", time.Hour)
		a := mustSingle(t, st, &lock.Options{Hook: rec, Retry: &lock.Retry{Attempts: lock.Forever, Delay: time.Millisecond}})
		if _, err := a.TryLock(ctx, "r", bbTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock = %v; want ErrNotAcquired", err)
		}
		if n := len(rec.ofKind(lock.EventAttempt)); n != 1 {
			t.Errorf("TryLock with Options.Retry Forever made %d attempts; want 1", n)
		}
	})
}

func TestSpecHkRetryForeverUntilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st := bbPlainStore{memory.New()}
		rec := &bbRecorder{}
		mustSingle(t, st, nil).TryLock(ctx, "r", time.Hour)
		a := mustSingle(t, st, &lock.Options{Hook: rec})
		_, err := a.Lock(ctx, "r", bbTTL, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 100 * time.Millisecond}))
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("Lock Forever until deadline = %v; want DeadlineExceeded, not ErrNotAcquired", err)
		}
		// 2s with waits of 50–100ms: at least 20 attempts.
		if n := len(rec.ofKind(lock.EventAttempt)); n < 20 {
			t.Errorf("Lock Forever made %d attempts in 2s with Delay 100ms; want >= 20", n)
		}
	})
}

func TestSpecHkRetryDelayJitterAndBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d, maxD = 40 * time.Millisecond, 160 * time.Millisecond
		_, rec, _ := bbAttempts(t, bbPlainStore{memory.New()}, lock.Options{},
			lock.WithRetry(lock.Retry{Attempts: 6, Delay: d, MaxDelay: maxD}))
		retries := rec.ofKind(lock.EventRetry)
		if len(retries) != 5 {
			t.Fatalf("%d EventRetry; want 5", len(retries))
		}
		cur := d
		for i, e := range retries {
			if e.Attempt != i+1 {
				t.Errorf("EventRetry %d: Attempt = %d; want %d", i, e.Attempt, i+1)
			}
			if e.Waiting {
				t.Errorf("EventRetry %d: Waiting = true on a store that is not a Waiter", i)
			}
			if e.Delay < cur/2 || e.Delay > cur {
				t.Errorf("EventRetry %d: Delay = %v; want in [%v, %v]", i, e.Delay, cur/2, cur)
			}
			if !errors.Is(e.Err, lock.ErrNotAcquired) {
				t.Errorf("EventRetry %d: Err = %v; want ErrNotAcquired", i, e.Err)
			}
			cur = min(2*cur, maxD)
		}
	})
}

func TestSpecHkRetryConstantDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 40 * time.Millisecond
		_, rec, _ := bbAttempts(t, bbPlainStore{memory.New()}, lock.Options{},
			lock.WithRetry(lock.Retry{Attempts: 5, Delay: d}))
		for i, e := range rec.ofKind(lock.EventRetry) {
			if e.Delay < d/2 || e.Delay > d {
				t.Errorf("EventRetry %d (MaxDelay 0): Delay = %v; want in [%v, %v]", i, e.Delay, d/2, d)
			}
		}
	})
}

func TestSpecHkRetryWaitingOnWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rec, _ := bbAttempts(t, memory.New(), lock.Options{},
			lock.WithRetry(lock.Retry{Attempts: 2, Delay: 10 * time.Millisecond}))
		r := rec.ofKind(lock.EventRetry)
		if len(r) != 1 || !r[0].Waiting {
			t.Errorf("EventRetry on a Waiter store = %+v; want one with Waiting true", r)
		}
	})
}

func TestSpecHkRetryValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := mustSingle(t, memory.New(), nil)
		for _, r := range []lock.Retry{
			{Attempts: 3, Delay: 10 * time.Millisecond, MaxDelay: 5 * time.Millisecond},
			{Attempts: 3, Delay: 0},
			{Attempts: lock.Forever, Delay: time.Millisecond / 2},
		} {
			_, err := a.Lock(ctx, "r", bbTTL, lock.WithRetry(r))
			bbWantInvalid(t, fmt.Sprintf("Lock(WithRetry(%+v))", r), err, "delay")
		}
		for _, r := range []lock.Retry{
			{Attempts: 3, Delay: 10 * time.Millisecond, MaxDelay: 10 * time.Millisecond},
			{Attempts: 3, Delay: time.Millisecond},
			{Attempts: 1},
		} {
			l, err := a.Lock(ctx, "ok", bbTTL, lock.WithRetry(r))
			if err != nil {
				t.Errorf("Lock(WithRetry(%+v)) = %v; want accepted", r, err)
			}
			a.Unlock(ctx, l)
		}
	})
}

func TestSpecHkClosedNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rec := &bbRecorder{}
		a := mustSingle(t, memory.New(), &lock.Options{Hook: rec})
		a.Shutdown(ctx)
		rec.reset()
		_, err := a.Lock(ctx, "r", bbTTL, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Millisecond}))
		if !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Lock after Shutdown = %v; want ErrClosed", err)
		}
		if n := len(rec.ofKind(lock.EventRetry)); n != 0 {
			t.Errorf("%d retries of ErrClosed; want none", n)
		}
	})
}

// ---- Hook events ----

func TestSpecHkEventKindStrings(t *testing.T) {
	if s := lock.EventStoreCall.String(); s != "store call" {
		t.Errorf("EventStoreCall.String() = %q; want \"store call\"", s)
	}
	if s := lock.CallAcquire.String(); s != "acquire" {
		t.Errorf("CallAcquire.String() = %q; want acquire", s)
	}
	if s := lock.CallRaiseFence.String(); s != "raise fence" {
		t.Errorf("CallRaiseFence.String() = %q; want \"raise fence\"", s)
	}
	kinds := []lock.EventKind{lock.EventAttempt, lock.EventStoreCall, lock.EventQuorum, lock.EventRetry,
		lock.EventAcquired, lock.EventNotAcquired, lock.EventExtended, lock.EventReleased, lock.EventLost}
	seen := map[string]bool{}
	for _, k := range kinds {
		s := k.String()
		if s == "" || seen[s] {
			t.Errorf("EventKind %d String() = %q; want a distinct name", k, s)
		}
		seen[s] = true
	}
}

func TestSpecHkHookTryLockEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rec := &bbRecorder{}
		a := mustSingle(t, memory.New(), &lock.Options{Hook: rec})
		l, err := a.TryLock(ctx, "r", bbTTL)
		if err != nil {
			t.Fatal(err)
		}
		want := []lock.EventKind{lock.EventAttempt, lock.EventStoreCall, lock.EventAcquired}
		if got := rec.kinds(); !slices.Equal(got, want) {
			t.Fatalf("TryLock events = %v; want %v", got, want)
		}
		ev := rec.events()
		if ev[0].Attempt != 1 || ev[0].Op != "trylock" || ev[0].Resource != "r" {
			t.Errorf("EventAttempt = %+v; want Attempt 1, Op trylock, Resource r", ev[0])
		}
		sc := ev[1]
		if sc.Store != "memory" || sc.StoreIndex != 0 || sc.StoreOp != "acquire" || sc.Err != nil || sc.Duration < 0 {
			t.Errorf("EventStoreCall = %+v; want Store memory, index 0, StoreOp acquire, Err nil", sc)
		}
		acq := ev[2]
		if acq.Attempt != 1 || acq.Lock != l || acq.Err != nil || acq.Op != "trylock" || acq.Resource != "r" || acq.Duration < 0 {
			t.Errorf("EventAcquired = %+v; want Attempt 1, the Lock, Op trylock", acq)
		}
	})
}

func TestSpecHkHookNotAcquiredEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		rec := &bbRecorder{}
		mustSingle(t, st, nil).TryLock(ctx, "r", time.Hour)
		a := mustSingle(t, st, &lock.Options{Hook: rec})
		a.TryLock(ctx, "r", bbTTL)
		want := []lock.EventKind{lock.EventAttempt, lock.EventStoreCall, lock.EventNotAcquired}
		if got := rec.kinds(); !slices.Equal(got, want) {
			t.Fatalf("contended TryLock events = %v; want %v", got, want)
		}
		ev := rec.events()
		if !errors.Is(ev[1].Err, lock.ErrNotAcquired) {
			t.Errorf("EventStoreCall.Err = %v; want ErrNotAcquired", ev[1].Err)
		}
		if !errors.Is(ev[2].Err, lock.ErrNotAcquired) || ev[2].Attempt != 1 {
			t.Errorf("EventNotAcquired = %+v; want Err ErrNotAcquired, Attempt 1", ev[2])
		}
	})
}

func TestSpecHkHookStoreFailureEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		rec := &bbRecorder{}
		a := mustSingle(t, st, &lock.Options{Hook: rec})
		st.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		a.TryLock(ctx, "r", bbTTL)
		var found bool
		for _, e := range rec.ofKind(lock.EventStoreCall) {
			if e.StoreOp == "acquire" && errors.Is(e.Err, errBBDown) {
				found = true
			}
		}
		if !found {
			t.Errorf("no EventStoreCall for the failed acquire with the store's error; events %+v", rec.events())
		}
		na := rec.ofKind(lock.EventNotAcquired)
		if len(na) != 1 || !errors.Is(na[0].Err, lock.ErrUnavailable) {
			t.Errorf("EventNotAcquired = %+v; want one with Err ErrUnavailable", na)
		}
	})
}

func TestSpecHkHookRetryEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rec, _ := bbAttempts(t, memory.New(), lock.Options{},
			lock.WithRetry(lock.Retry{Attempts: 3, Delay: time.Millisecond}))
		var got []lock.EventKind
		for _, k := range rec.kinds() {
			if k != lock.EventStoreCall {
				got = append(got, k)
			}
		}
		want := []lock.EventKind{lock.EventAttempt, lock.EventRetry, lock.EventAttempt, lock.EventRetry, lock.EventAttempt, lock.EventNotAcquired}
		if !slices.Equal(got, want) {
			t.Errorf("Lock(3 attempts) events (store calls left out) = %v; want %v", got, want)
		}
		for i, e := range rec.ofKind(lock.EventAttempt) {
			if e.Attempt != i+1 || e.Op != "lock" {
				t.Errorf("EventAttempt %d = Attempt %d Op %q; want Attempt %d Op lock", i, e.Attempt, e.Op, i+1)
			}
		}
	})
}

func TestSpecHkHookUnlockExtendEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		rec := &bbRecorder{}
		a := mustSingle(t, st, &lock.Options{Hook: rec})
		l, _ := a.TryLock(ctx, "r", bbTTL)
		rec.reset()
		nl, _ := a.Extend(ctx, l, bbTTL)
		ev := rec.events()
		if len(ev) != 2 || ev[0].Kind != lock.EventStoreCall || ev[0].StoreOp != "extend" ||
			ev[1].Kind != lock.EventExtended || ev[1].Err != nil || ev[1].Op != "extend" || ev[1].Resource != "r" {
			t.Errorf("Extend events = %+v; want store call (extend), EventExtended Err nil Op extend", ev)
		}
		rec.reset()
		a.Unlock(ctx, nl)
		ev = rec.events()
		if len(ev) != 2 || ev[0].Kind != lock.EventStoreCall || ev[0].StoreOp != "release" ||
			ev[1].Kind != lock.EventReleased || ev[1].Err != nil || ev[1].Op != "unlock" || ev[1].Lock.Token != l.Token {
			t.Errorf("Unlock events = %+v; want store call (release), EventReleased Err nil Op unlock with the Lock", ev)
		}
		rec.reset()
		a.Unlock(ctx, nl)
		rel := rec.ofKind(lock.EventReleased)
		if len(rel) != 1 || !errors.Is(rel[0].Err, lock.ErrNotHeld) {
			t.Errorf("second Unlock EventReleased = %+v; want Err ErrNotHeld", rel)
		}
		sc := rec.ofKind(lock.EventStoreCall)
		if len(sc) != 1 || !errors.Is(sc[0].Err, lock.ErrNotHeld) {
			t.Errorf("second Unlock EventStoreCall = %+v; want Err ErrNotHeld", sc)
		}
	})
}

func TestSpecHkHookQuorumEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, b, _, three := bbThree()
		rec := &bbRecorder{}
		m := mustMulti(t, three, &lock.Options{Hook: rec, NoFence: true})
		m.TryLock(ctx, "r", bbTTL)
		q := rec.ofKind(lock.EventQuorum)
		if len(q) != 1 || q[0].Err != nil || q[0].Granted < 2 || q[0].Failed != 0 || q[0].Refused != 0 {
			t.Errorf("EventQuorum = %+v; want one with Err nil, Granted >= 2", q)
		}
		idx := map[string]int{}
		for _, e := range rec.ofKind(lock.EventStoreCall) {
			if e.StoreOp == "acquire" {
				idx[e.Store] = e.StoreIndex
			}
		}
		if len(idx) < 2 {
			t.Errorf("store calls %v; want acquire on at least 2 stores", idx)
		}
		for name, i := range idx {
			if want := map[string]int{"a": 0, "b": 1, "c": 2}[name]; i != want {
				t.Errorf("EventStoreCall Store %q StoreIndex %d; want %d", name, i, want)
			}
		}
		// order: attempt, ..., quorum, ..., acquired
		kinds := rec.kinds()
		ia, iq, ic := slices.Index(kinds, lock.EventAttempt), slices.Index(kinds, lock.EventQuorum), slices.Index(kinds, lock.EventAcquired)
		if !(ia >= 0 && ia < iq && iq < ic) {
			t.Errorf("events %v; want attempt before quorum before acquired", kinds)
		}

		rec.reset()
		a.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		b.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		m.TryLock(ctx, "s", bbTTL)
		q = rec.ofKind(lock.EventQuorum)
		if len(q) != 1 || q[0].Err == nil || q[0].Failed < 2 || q[0].Granted > 1 {
			t.Errorf("EventQuorum with 2 of 3 failing = %+v; want Err set, Failed >= 2", q)
		}
	})
}

func TestSpecHkHookLostEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		rec := &bbRecorder{}
		a := mustSingle(t, st, &lock.Options{Hook: rec})
		lock.Run(ctx, a, "r", 3*time.Second, func(ctx context.Context, l lock.Lock) error {
			st.Expire("r")
			<-ctx.Done()
			return nil
		})
		lost := rec.ofKind(lock.EventLost)
		if len(lost) != 1 || lost[0].Op != "run" || lost[0].Resource != "r" || lost[0].Err == nil {
			t.Errorf("EventLost = %+v; want one with Op run, Resource r, Err set", lost)
		}
	})
}

// bbTimed records the fake time of each EventRetry.
type bbTimed struct {
	bbRecorder
	start time.Time
	at    []time.Duration
}

func (r *bbTimed) Observe(ctx context.Context, e lock.Event) {
	r.bbRecorder.Observe(ctx, e)
	if e.Kind == lock.EventRetry {
		r.mu.Lock()
		r.at = append(r.at, time.Since(r.start))
		r.mu.Unlock()
	}
}

func TestSpecHkDefaultPolicyPollsThenBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := bbPlainStore{memory.New()}
		mustSingle(t, st, nil).TryLock(context.Background(), "r", time.Hour)
		rec := &bbTimed{start: time.Now()}
		a := mustSingle(t, st, &lock.Options{Hook: rec})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Lock(ctx, "r", bbTTL)
		retries := rec.ofKind(lock.EventRetry)
		if len(retries) == 0 {
			t.Fatal("no retries")
		}
		var maxSeen time.Duration
		for i, e := range retries {
			at := rec.at[i]
			if at < 250*time.Millisecond && (e.Delay < 5*time.Millisecond || e.Delay > 10*time.Millisecond) {
				t.Errorf("retry at %v (first quarter second): Delay %v; want 5–10ms", at, e.Delay)
			}
			if e.Delay > 500*time.Millisecond {
				t.Errorf("retry at %v: Delay %v; want at most 500ms", at, e.Delay)
			}
			maxSeen = max(maxSeen, e.Delay)
		}
		if maxSeen <= 10*time.Millisecond {
			t.Errorf("default policy never backed off in 5s (max Delay %v)", maxSeen)
		}
	})
}

func TestSpecHkWaitBoundedByTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rec, _ := bbAttempts(t, memory.New(), lock.Options{},
			lock.WithRetry(lock.Retry{Attempts: 2, Delay: 10 * time.Millisecond}))
		for _, e := range rec.ofKind(lock.EventRetry) {
			if e.Waiting && e.Delay > bbTTL {
				t.Errorf("waiting EventRetry Delay %v; want at most the lock's TTL %v", e.Delay, bbTTL)
			}
		}
	})
}

func TestSpecHkIsLockedHolderEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rec := &bbRecorder{}
		a := mustSingle(t, memory.New(), &lock.Options{Hook: rec})
		a.IsLocked(ctx, "r")
		sc := rec.ofKind(lock.EventStoreCall)
		if len(sc) != 1 || sc[0].StoreOp != "exists" || sc[0].Op != "islocked" || sc[0].Resource != "r" {
			t.Errorf("IsLocked store call events = %+v; want one with StoreOp exists, Op islocked", sc)
		}
		rec.reset()
		a.Holder(ctx, "r")
		sc = rec.ofKind(lock.EventStoreCall)
		if len(sc) != 1 || sc[0].StoreOp != "holder" || sc[0].Op != "holder" {
			t.Errorf("Holder store call events = %+v; want one with StoreOp holder, Op holder", sc)
		}
	})
}
