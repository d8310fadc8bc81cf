package lock_test

// Black-box specification tests of SingleLocker, MultiLocker, Options
// validation, the error sentinels and Lock values, written against the
// package documentation only.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// ---- helpers shared by the spec_*_test.go files ----

// bbRecorder is a Hook that records every event.
type bbRecorder struct {
	mu sync.Mutex
	ev []lock.Event
}

func (r *bbRecorder) Observe(_ context.Context, e lock.Event) {
	r.mu.Lock()
	r.ev = append(r.ev, e)
	r.mu.Unlock()
}

func (r *bbRecorder) events() []lock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]lock.Event(nil), r.ev...)
}

func (r *bbRecorder) reset() {
	r.mu.Lock()
	r.ev = nil
	r.mu.Unlock()
}

func (r *bbRecorder) ofKind(k lock.EventKind) []lock.Event {
	var out []lock.Event
	for _, e := range r.events() {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func (r *bbRecorder) kinds() []lock.EventKind {
	var out []lock.EventKind
	for _, e := range r.events() {
		out = append(out, e.Kind)
	}
	return out
}

// bbPlainStore is a Store with none of the optional capabilities: no
// Extender, Fencer, Waiter, HolderReader, Starter.
type bbPlainStore struct{ m *memory.Store }

func (s bbPlainStore) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	return s.m.Acquire(ctx, r, tok, ttl)
}
func (s bbPlainStore) Release(ctx context.Context, r, tok string) error {
	return s.m.Release(ctx, r, tok)
}
func (s bbPlainStore) Exists(ctx context.Context, r string) (bool, error) {
	return s.m.Exists(ctx, r)
}

// bbExtStore is a plain Store that can also extend (an Extender, but not a
// Waiter).
type bbExtStore struct{ bbPlainStore }

func (s bbExtStore) Extend(ctx context.Context, r, tok string, ttl time.Duration) error {
	return s.m.Extend(ctx, r, tok, ttl)
}

func bbThree() (*memory.Store, *memory.Store, *memory.Store, []lock.Store) {
	a, b, c := memory.New(memory.WithName("a")), memory.New(memory.WithName("b")), memory.New(memory.WithName("c"))
	return a, b, c, []lock.Store{a, b, c}
}

// bbWantInvalid checks that err matches ErrInvalid and that its message
// names the problem (contains one of keywords, case-insensitively).
func bbWantInvalid(t *testing.T, what string, err error, keywords ...string) {
	t.Helper()
	if !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("%s = %v; want ErrInvalid", what, err)
		return
	}
	msg := strings.ToLower(err.Error())
	for _, k := range keywords {
		if strings.Contains(msg, strings.ToLower(k)) {
			return
		}
	}
	t.Errorf("%s = %q; want a message naming the problem (one of %q)", what, err, keywords)
}

var errBBDown = errors.New("spec: connection reset")

const bbTTL = 10 * time.Second

// ---- SingleLocker basics ----

func TestSpecLkSingleTryLockContended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		if _, err := a.TryLock(ctx, "r", bbTTL); err != nil {
			t.Fatalf("TryLock: %v", err)
		}
		l, err := b.TryLock(ctx, "r", bbTTL)
		if !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("TryLock of held resource = %v; want ErrNotAcquired", err)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("TryLock of held resource = %v; matches a context error or ErrUnavailable", err)
		}
		if !l.IsZero() {
			t.Errorf("TryLock failure returned non-zero Lock %+v", l)
		}
		var le *lock.Error
		if !errors.As(err, &le) || le.Op != "trylock" || le.Resource != "r" || len(le.Stores) != 0 {
			t.Errorf("TryLock error = %#v; want *Error{Op: trylock, Resource: r, no Stores}", err)
		}
	})
}

func TestSpecLkErrorStringFormat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		a.TryLock(ctx, "report", bbTTL)
		_, err := b.TryLock(ctx, "report", bbTTL)
		if want := `trylock "report": not acquired: held by another owner`; err == nil || err.Error() != want {
			t.Errorf("error string = %q; want %q (documented example)", err, want)
		}
	})
}

func TestSpecLkSingleNotReentrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := mustSingle(t, memory.New(), nil)
		if _, err := a.Lock(ctx, "r", bbTTL); err != nil {
			t.Fatal(err)
		}
		_, err := a.Lock(ctx, "r", bbTTL, lock.WithRetry(lock.NoRetry))
		if !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("second Lock by the same locker = %v; want ErrNotAcquired (not re-entrant)", err)
		}
	})
}

func TestSpecLkSingleIsLocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := mustSingle(t, memory.New(), nil)
		if held, err := a.IsLocked(ctx, "r"); err != nil || held {
			t.Fatalf("IsLocked before Lock = %v, %v; want false, nil", held, err)
		}
		l, _ := a.Lock(ctx, "r", bbTTL)
		if held, err := a.IsLocked(ctx, "r"); err != nil || !held {
			t.Errorf("IsLocked while held = %v, %v; want true, nil", held, err)
		}
		if err := a.Unlock(ctx, l); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		if held, err := a.IsLocked(ctx, "r"); err != nil || held {
			t.Errorf("IsLocked after Unlock = %v, %v; want false, nil", held, err)
		}
	})
}

func TestSpecLkUnlockAfterExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "r", bbTTL)
		st.Expire("r")
		if err := a.Unlock(ctx, l); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Unlock(l) after Expire = %v; want ErrNotHeld", err)
		}
	})
}

func TestSpecLkUnlockAfterTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "r", bbTTL)
		time.Sleep(bbTTL + time.Second)
		lb, err := b.TryLock(ctx, "r", bbTTL)
		if err != nil {
			t.Fatalf("TryLock after TTL = %v; want success", err)
		}
		if err := a.Unlock(ctx, l); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Unlock(l) after takeover = %v; want ErrNotHeld", err)
		}
		if held, _ := b.IsLocked(ctx, "r"); !held {
			t.Errorf("new owner's lock was released by the old owner's Unlock")
		}
		b.Unlock(ctx, lb)
	})
}

func TestSpecLkExtendAfterExpireNotRecreated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "r", bbTTL)
		st.Expire("r")
		nl, err := a.Extend(ctx, l, bbTTL)
		if !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Extend(l) after Expire = %v; want ErrNotHeld", err)
		}
		if !nl.IsZero() {
			t.Errorf("Extend error returned non-zero Lock %+v", nl)
		}
		if held, _ := a.IsLocked(ctx, "r"); held {
			t.Errorf("IsLocked after failed Extend = true; an expired lock was re-created")
		}
	})
}

func TestSpecLkExtendMovesValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "r", bbTTL)
		time.Sleep(bbTTL / 2)
		nl, err := a.Extend(ctx, l, bbTTL)
		if err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if !nl.ValidUntil.After(l.ValidUntil) {
			t.Errorf("Extend ValidUntil = %v; want after the old %v", nl.ValidUntil, l.ValidUntil)
		}
		if nl.Token != l.Token || nl.Resource != l.Resource {
			t.Errorf("Extend changed token/resource: %+v -> %+v", l, nl)
		}
		time.Sleep(bbTTL * 3 / 4) // past the original TTL, within the new one
		if _, err := b.TryLock(ctx, "r", bbTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock after original TTL of extended lock = %v; want ErrNotAcquired", err)
		}
	})
}

func TestSpecLkValidityDriftAllowance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		for _, tc := range []struct {
			drift float64
			want  time.Duration
		}{
			{0, bbTTL - bbTTL/100 - 2*time.Millisecond},
			{0.1, bbTTL - bbTTL/10 - 2*time.Millisecond},
		} {
			a := mustSingle(t, memory.New(), &lock.Options{DriftFactor: tc.drift})
			start := time.Now()
			l, err := a.TryLock(ctx, "r", bbTTL)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.ValidUntil.Sub(start); got != tc.want {
				t.Errorf("DriftFactor %v: ValidUntil-start = %v; want %v (ttl - ttl*drift - 2ms)", tc.drift, got, tc.want)
			}
			if !l.Valid() || l.Remaining() != tc.want {
				t.Errorf("DriftFactor %v: Valid()=%v Remaining()=%v; want true, %v", tc.drift, l.Valid(), l.Remaining(), tc.want)
			}
		}
	})
}

func TestSpecLkLockValidRemainingAfterValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mustSingle(t, memory.New(), nil)
		l, _ := a.TryLock(context.Background(), "r", bbTTL)
		time.Sleep(bbTTL)
		if l.Valid() || l.Remaining() > 0 {
			t.Errorf("after the TTL: Valid()=%v Remaining()=%v; want false, <=0", l.Valid(), l.Remaining())
		}
		if (lock.Lock{}).IsZero() != true || l.IsZero() {
			t.Errorf("IsZero wrong: zero=%v, held=%v", (lock.Lock{}).IsZero(), l.IsZero())
		}
	})
}

func TestSpecLkLockExpiresAtTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		a.Lock(ctx, "r", bbTTL)
		time.Sleep(bbTTL - time.Millisecond)
		if _, err := b.TryLock(ctx, "r", bbTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock just before TTL = %v; want ErrNotAcquired", err)
		}
		time.Sleep(2 * time.Millisecond)
		if _, err := b.TryLock(ctx, "r", bbTTL); err != nil {
			t.Errorf("TryLock after TTL = %v; want success", err)
		}
	})
}

func TestSpecLkLockWaitsForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		la, _ := a.Lock(ctx, "r", time.Hour)
		done := make(chan error, 1)
		go func() {
			_, err := b.Lock(ctx, "r", bbTTL)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Lock of held resource returned %v before release", err)
		default:
		}
		time.Sleep(time.Minute) // default retry: forever
		select {
		case err := <-done:
			t.Fatalf("Lock (Forever) returned %v while the resource was held", err)
		default:
		}
		a.Unlock(ctx, la)
		if err := <-done; err != nil {
			t.Errorf("waiting Lock after release = %v; want success", err)
		}
	})
}

func TestSpecLkLockContextDeadlineNotNotAcquired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		a.Lock(context.Background(), "r", time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := b.Lock(ctx, "r", bbTTL)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock with expiring ctx on held resource = %v; want DeadlineExceeded", err)
		}
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("Lock with expiring ctx = %v; must not match ErrNotAcquired", err)
		}
	})
}

func TestSpecLkLockCanceledContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		a.Lock(context.Background(), "r", time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := b.Lock(ctx, "r", bbTTL)
			done <- err
		}()
		synctest.Wait()
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("Lock canceled while waiting = %v; want context.Canceled and not ErrNotAcquired", err)
		}
	})
}

func TestSpecLkStoreFailureUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		st.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		_, err := a.TryLock(ctx, "r", bbTTL)
		if !errors.Is(err, lock.ErrUnavailable) || !errors.Is(err, errBBDown) {
			t.Errorf("TryLock with failing store = %v; want ErrUnavailable with the store's error in the chain", err)
		}
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock with failing store = %v; must not match ErrNotAcquired", err)
		}
		var le *lock.Error
		if !errors.As(err, &le) || len(le.Stores) != 1 || !errors.Is(le.Stores[0].Err, errBBDown) {
			t.Errorf("TryLock error = %#v; want *Error naming the failed store", err)
		}
	})
}

func TestSpecLkAmbiguousAcquireReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		st.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown, AfterApply: true})
		_, err := a.TryLock(ctx, "r", bbTTL)
		if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock with lost reply = %v; want ErrUnavailable, not ErrNotAcquired", err)
		}
		synctest.Wait()
		if held, _ := st.Exists(ctx, "r"); held {
			t.Errorf("store still holds r after an ambiguous acquisition; the locker should release it")
		}
	})
}

func TestSpecLkStoreErrClosedIsUnavailableAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		closedErr := fmt.Errorf("client: %w", lock.ErrClosed)
		st.Inject(memory.Fault{Ops: memory.OpAcquire, Err: closedErr})
		if _, err := a.TryLock(ctx, "r", bbTTL); !errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("TryLock with store error wrapping ErrClosed = %v; want ErrUnavailable", err)
		}
		st.Inject(memory.Fault{Ops: memory.OpAcquire, Err: closedErr})
		if _, err := a.Lock(ctx, "r2", bbTTL, lock.WithRetry(lock.Retry{Attempts: 2, Delay: time.Millisecond})); err != nil {
			t.Errorf("Lock (2 attempts) after one store ErrClosed failure = %v; want retried and acquired", err)
		}
	})
}

func TestSpecLkLockRetriesStoreFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		st.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown, Times: 2})
		_, err := a.Lock(context.Background(), "r", bbTTL, lock.WithRetry(lock.Retry{Attempts: 3, Delay: time.Millisecond}))
		if err != nil {
			t.Errorf("Lock (3 attempts) after 2 store failures = %v; want success", err)
		}
	})
}

func TestSpecLkUnlockStoreFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "r", bbTTL)
		st.Inject(memory.Fault{Ops: memory.OpRelease, Err: errBBDown})
		err := a.Unlock(ctx, l)
		if !errors.Is(err, lock.ErrUnavailable) || !errors.Is(err, errBBDown) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Unlock with failing store = %v; want ErrUnavailable with store error, not ErrNotHeld", err)
		}
		if err := a.Unlock(ctx, l); err != nil {
			t.Errorf("Unlock retried after ErrUnavailable = %v; want nil", err)
		}
	})
}

func TestSpecLkUnlockCanceledContextKeepsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		l, _ := a.Lock(context.Background(), "r", bbTTL)
		st.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		err := a.Unlock(ctx, l)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Unlock with ctx ending first = %v; want DeadlineExceeded", err)
		}
		time.Sleep(2 * time.Second)
		if held, _ := st.Exists(context.Background(), "r"); !held {
			t.Errorf("lock released although Unlock's ctx ended first (SingleLocker retries nothing in the background)")
		}
	})
}

func TestSpecLkExtendUnsupported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := mustSingle(t, bbPlainStore{memory.New()}, nil)
		l, err := a.TryLock(ctx, "r", bbTTL)
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence != 0 {
			t.Errorf("Fence on a store that is not a Fencer = %d; want 0", l.Fence)
		}
		if _, err := a.Extend(ctx, l, bbTTL); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Extend on a store without Extender = %v; want errors.ErrUnsupported", err)
		}
		if _, _, err := a.Holder(ctx, "r"); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Holder on a store that is not a HolderReader = %v; want errors.ErrUnsupported", err)
		}
	})
}

// ---- fences ----

func TestSpecLkFencesIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := mustSingle(t, memory.New(), nil)
		var prev uint64
		for i := range 3 {
			l, err := a.TryLock(ctx, "r", bbTTL)
			if err != nil {
				t.Fatal(err)
			}
			if l.Fence <= prev {
				t.Errorf("lock %d Fence = %d; want > %d", i, l.Fence, prev)
			}
			prev = l.Fence
			a.Unlock(ctx, l)
		}
		n := mustSingle(t, memory.New(), &lock.Options{NoFence: true})
		if l, _ := n.TryLock(ctx, "r", bbTTL); l.Fence != 0 {
			t.Errorf("NoFence lock Fence = %d; want 0", l.Fence)
		}
	})
}

// ---- Holder ----

func TestSpecLkHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, &lock.Options{Holder: "host:42"})
		anon := mustSingle(t, st, nil)
		if h, held, err := a.Holder(ctx, "r"); err != nil || held || h != "" {
			t.Errorf("Holder of free resource = %q, %v, %v; want \"\", false, nil", h, held, err)
		}
		l, _ := a.Lock(ctx, "r", bbTTL)
		if !strings.HasSuffix(l.Token, "~host:42") || lock.HolderOf(l.Token) != "host:42" {
			t.Errorf("token %q; want suffix ~host:42 and HolderOf = host:42", l.Token)
		}
		if h, held, err := anon.Holder(ctx, "r"); err != nil || !held || h != "host:42" {
			t.Errorf("Holder = %q, %v, %v; want host:42, true, nil", h, held, err)
		}
		la, _ := anon.Lock(ctx, "s", bbTTL)
		if h, held, err := a.Holder(ctx, "s"); err != nil || !held || h != "" {
			t.Errorf("Holder of lock without holder name = %q, %v, %v; want \"\", true, nil", h, held, err)
		}
		if strings.Contains(la.Token, "~") {
			t.Errorf("default token %q contains '~'", la.Token)
		}
	})
}

func TestSpecLkHolderOf(t *testing.T) {
	for tok, want := range map[string]string{"abc": "", "a~b": "b", "a~b~c": "c", "x~": ""} {
		if got := lock.HolderOf(tok); got != want {
			t.Errorf("HolderOf(%q) = %q; want %q", tok, got, want)
		}
	}
}

// ---- Lock values ----

func TestSpecLkLockJSONRoundTripAndForeignUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "invoice/42", bbTTL)
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var got lock.Lock
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Resource != l.Resource || got.Token != l.Token || got.Fence != l.Fence || !got.ValidUntil.Equal(l.ValidUntil) {
			t.Errorf("JSON round trip = %+v; want %+v", got, l)
		}
		for _, k := range []string{`"resource"`, `"token"`, `"validUntil"`} {
			if !strings.Contains(string(data), k) {
				t.Errorf("JSON %s lacks key %s", data, k)
			}
		}
		if err := b.Unlock(ctx, got); err != nil {
			t.Errorf("Unlock of decoded Lock on another locker = %v; want nil", err)
		}
		if held, _ := a.IsLocked(ctx, "invoice/42"); held {
			t.Errorf("IsLocked after foreign Unlock = true; want false")
		}
	})
}

func TestSpecLkForeignExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "r", bbTTL)
		nl, err := b.Extend(ctx, l, bbTTL)
		if err != nil || nl.Token != l.Token {
			t.Errorf("Extend on another locker = %+v, %v; want success with same token", nl, err)
		}
	})
}

func TestSpecLkZeroLockInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := mustSingle(t, memory.New(), nil)
		bbWantInvalid(t, "Unlock(Lock{})", a.Unlock(ctx, lock.Lock{}), "lock", "zero", "resource", "token")
		_, err := a.Extend(ctx, lock.Lock{}, bbTTL)
		bbWantInvalid(t, "Extend(Lock{})", err, "lock", "zero", "resource", "token")
	})
}

// ---- argument and Options validation ----

func TestSpecLkArgumentValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rec := &bbRecorder{}
		st := memory.New()
		a := mustSingle(t, st, &lock.Options{Hook: rec})
		_, err := a.TryLock(ctx, "", bbTTL)
		bbWantInvalid(t, "TryLock(\"\")", err, "resource", "empty")
		_, err = a.Lock(ctx, "", bbTTL)
		bbWantInvalid(t, "Lock(\"\")", err, "resource", "empty")
		for _, ttl := range []time.Duration{0, -time.Second, lock.MaxTTL + time.Second} {
			_, err = a.Lock(ctx, "r", ttl)
			bbWantInvalid(t, fmt.Sprintf("Lock(ttl=%v)", ttl), err, "ttl")
		}
		l, _ := a.TryLock(ctx, "ok", bbTTL)
		_, err = a.Extend(ctx, l, 0)
		bbWantInvalid(t, "Extend(ttl=0)", err, "ttl")
		_, err = a.IsLocked(ctx, "")
		bbWantInvalid(t, "IsLocked(\"\")", err, "resource", "empty")
		for _, e := range rec.events() {
			if e.Kind == lock.EventStoreCall && e.Resource != "ok" {
				t.Errorf("store call %+v made for an invalid request; want nothing sent", e)
			}
		}
		if _, err := a.Lock(ctx, "max", lock.MaxTTL); err != nil {
			t.Errorf("Lock(ttl=MaxTTL) = %v; want accepted", err)
		}
	})
}

func TestSpecLkOptionsValidation(t *testing.T) {
	st := memory.New()
	cases := []struct {
		name string
		o    lock.Options
		kw   []string
	}{
		{"Holder with ~", lock.Options{Holder: "a~b"}, []string{"holder", "~"}},
		{"Holder too long", lock.Options{Holder: strings.Repeat("h", lock.MaxHolderLen+1)}, []string{"holder"}},
		{"Holder with tab", lock.Options{Holder: "a\tb"}, []string{"holder", "print"}},
		{"Holder with newline", lock.Options{Holder: "a\nb"}, []string{"holder", "print"}},
		{"Holder with no-break space", lock.Options{Holder: "a\u00a0b"}, []string{"holder", "print"}},
		{"Holder invalid UTF-8", lock.Options{Holder: "a\xffb"}, []string{"holder", "utf"}},
		{"DriftFactor 0.5", lock.Options{DriftFactor: 0.5}, []string{"drift"}},
		{"DriftFactor negative", lock.Options{DriftFactor: -0.1}, []string{"drift"}},
		{"Quorum on single", lock.Options{Quorum: bbQuorum(func(g, n int) bool { return g == n })}, []string{"quorum"}},
		{"Retry MaxDelay below Delay", lock.Options{Retry: &lock.Retry{Attempts: 3, Delay: 10 * time.Millisecond, MaxDelay: 5 * time.Millisecond}}, []string{"delay"}},
		{"Retry Delay under 1ms", lock.Options{Retry: &lock.Retry{Attempts: 3, Delay: 500 * time.Microsecond}}, []string{"delay"}},
		{"LockDelay above MaxTTL", lock.Options{LockDelay: lock.MaxTTL + time.Hour}, []string{"delay", "ttl"}},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			o := c.o
			l, err := lock.NewSingle(memory.New(), &o)
			if err == nil {
				// Some options can only be checked against a call (a
				// Retry, a LockDelay with a ttl): then the call refuses.
				_, err = l.Lock(context.Background(), "r", bbTTL)
			}
			bbWantInvalid(t, c.name, err, c.kw...)
		})
	}
	// Boundary values are accepted.
	for _, o := range []lock.Options{
		{Holder: strings.Repeat("h", lock.MaxHolderLen)},
		{Holder: "host 1:42 é"},
		{DriftFactor: 0.49},
	} {
		if _, err := lock.NewSingle(st, &o); err != nil {
			t.Errorf("NewSingle(%+v) = %v; want accepted", o, err)
		}
	}
}

func TestSpecLkLockDelayTTLSumValidated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, err := lock.NewSingle(memory.New(), &lock.Options{LockDelay: time.Hour})
		if err != nil {
			t.Fatalf("NewSingle(LockDelay 1h) = %v", err)
		}
		_, err = a.Lock(context.Background(), "r", lock.MaxTTL)
		bbWantInvalid(t, "Lock(ttl=MaxTTL) with LockDelay 1h", err, "delay", "ttl")
		if _, err := a.Lock(context.Background(), "r", lock.MaxTTL-time.Hour); err != nil {
			t.Errorf("Lock(ttl=MaxTTL-LockDelay) = %v; want accepted", err)
		}
	})
}

func TestSpecLkNewSingleNilStore(t *testing.T) {
	_, err := lock.NewSingle(nil, nil)
	bbWantInvalid(t, "NewSingle(nil)", err, "store")
}

type bbQuorum func(g, n int) bool

func (q bbQuorum) Met(g, n int) bool { return q(g, n) }

func TestSpecLkNewMultiValidation(t *testing.T) {
	a, b, c, three := bbThree()
	_, err := lock.NewMulti([]lock.Store{a, a, b}, nil)
	bbWantInvalid(t, "NewMulti(duplicate stores)", err, "store", "distinct", "duplicate")
	_, err = lock.NewMulti([]lock.Store{a, nil, c}, nil)
	bbWantInvalid(t, "NewMulti(nil store)", err, "store", "nil")
	for name, q := range map[string]lock.Quorum{
		"half or fewer": bbQuorum(func(g, n int) bool { return g >= 1 }),
		"unmeetable":    bbQuorum(func(g, n int) bool { return g >= 4 }),
		"non-monotonic": bbQuorum(func(g, n int) bool { return g == 2 }),
	} {
		_, err := lock.NewMulti(three, &lock.Options{Quorum: q})
		bbWantInvalid(t, "NewMulti(quorum "+name+")", err, "quorum")
	}
	if _, err := lock.NewMulti(three, &lock.Options{Quorum: bbQuorum(func(g, n int) bool { return g == n })}); err != nil {
		t.Errorf("NewMulti(unanimous quorum) = %v; want accepted", err)
	}
}

// ---- Shutdown, UnlockAll ----

func TestSpecLkShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		la, _ := a.Lock(ctx, "mine", bbTTL)
		lb, _ := b.Lock(ctx, "theirs", bbTTL)
		if err := a.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if held, _ := b.IsLocked(ctx, "mine"); held {
			t.Errorf("Shutdown left its lock held")
		}
		if _, err := a.TryLock(ctx, "x", bbTTL); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("TryLock after Shutdown = %v; want ErrClosed", err)
		}
		if _, err := a.Lock(ctx, "x", bbTTL); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Lock after Shutdown = %v; want ErrClosed", err)
		}
		if _, err := a.Extend(ctx, lb, bbTTL); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Extend after Shutdown = %v; want ErrClosed", err)
		}
		if err := a.Unlock(ctx, lb); err != nil {
			t.Errorf("Unlock after Shutdown = %v; want nil (Unlock keeps working)", err)
		}
		_ = la
	})
}

func TestSpecLkShutdownEndsWaitingLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		a.Lock(ctx, "r", time.Hour)
		done := make(chan error, 1)
		go func() {
			_, err := b.Lock(ctx, "r", bbTTL)
			done <- err
		}()
		synctest.Wait()
		b.Shutdown(ctx)
		if err := <-done; !errors.Is(err, lock.ErrClosed) {
			t.Errorf("waiting Lock at Shutdown = %v; want ErrClosed", err)
		}
	})
}

func TestSpecLkUnlockAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		a.Lock(ctx, "r1", bbTTL)
		a.Lock(ctx, "r2", bbTTL)
		a.Lock(ctx, "gone", bbTTL)
		lb, _ := b.Lock(ctx, "b", bbTTL)
		st.Expire("gone")
		if err := a.UnlockAll(ctx); err != nil {
			t.Errorf("UnlockAll with one lock already expired = %v; want nil", err)
		}
		if got := st.Resources(); len(got) != 1 || got[0] != "b" {
			t.Errorf("after UnlockAll held = %v; want [b]", got)
		}
		// a lock that a only extended stays b's
		if _, err := a.Extend(ctx, lb, bbTTL); err != nil {
			t.Fatal(err)
		}
		a.UnlockAll(ctx)
		if held, _ := st.Exists(ctx, "b"); !held {
			t.Errorf("UnlockAll released a lock the locker only extended")
		}
		b.UnlockAll(ctx)
		if held, _ := st.Exists(ctx, "b"); held {
			t.Errorf("acquirer's UnlockAll did not release its lock extended by another")
		}
		// the locker works on after UnlockAll
		if _, err := a.TryLock(ctx, "r1", bbTTL); err != nil {
			t.Errorf("TryLock after UnlockAll = %v; want success", err)
		}
	})
}

// ---- token generator ----

type bbTokens struct {
	tok string
	err error
}

func (g bbTokens) Token() (string, error) { return g.tok, g.err }

func TestSpecLkTokenGenerator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		genErr := errors.New("spec: no entropy")
		a := mustSingle(t, memory.New(), &lock.Options{Tokens: bbTokens{err: genErr}})
		_, err := a.TryLock(ctx, "r", bbTTL)
		if !errors.Is(err, lock.ErrUnavailable) || !errors.Is(err, genErr) {
			t.Errorf("TryLock with failing TokenGenerator = %v; want ErrUnavailable with its error", err)
		}
		e := mustSingle(t, memory.New(), &lock.Options{Tokens: bbTokens{}})
		_, err = e.TryLock(ctx, "r", bbTTL)
		bbWantInvalid(t, "TryLock with empty token", err, "token")
	})
}

// ---- LockDelay ----

func TestSpecLkLockDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		const delay = 5 * time.Second
		a := mustSingle(t, st, &lock.Options{LockDelay: delay})
		b := mustSingle(t, st, nil)
		start := time.Now()
		l, _ := a.TryLock(ctx, "r", bbTTL)
		if want := start.Add(bbTTL - bbTTL/100 - 2*time.Millisecond); !l.ValidUntil.Equal(want) {
			t.Errorf("ValidUntil with LockDelay = %v; want the ttl's, %v", l.ValidUntil, want)
		}
		time.Sleep(bbTTL + delay/2)
		if _, err := b.TryLock(ctx, "r", bbTTL); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock within the lock delay = %v; want ErrNotAcquired", err)
		}
		if held, _ := b.IsLocked(ctx, "r"); !held {
			t.Errorf("IsLocked within the lock delay = false; want true")
		}
		if err := a.Unlock(ctx, l); err != nil {
			t.Errorf("holder's Unlock past ValidUntil within the delay = %v; want nil", err)
		}
		if _, err := b.TryLock(ctx, "r", bbTTL); err != nil {
			t.Errorf("TryLock after Unlock = %v; want success (Unlock frees at once)", err)
		}
	})
}

func TestSpecLkLockDelayThenFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		const delay = 5 * time.Second
		a := mustSingle(t, st, &lock.Options{LockDelay: delay})
		l, _ := a.TryLock(ctx, "r", bbTTL)
		time.Sleep(bbTTL + delay/2)
		nl, err := a.Extend(ctx, l, bbTTL)
		if err != nil {
			t.Fatalf("Extend past ValidUntil within the delay = %v; want nil", err)
		}
		time.Sleep(bbTTL + delay + time.Millisecond)
		if err := a.Unlock(ctx, nl); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Unlock after ttl+delay = %v; want ErrNotHeld", err)
		}
	})
}

// ---- MultiLocker ----

func TestSpecLkMultiLockAndFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, b, c, three := bbThree()
		m := mustMulti(t, three, nil)
		start := time.Now()
		l, err := m.TryLock(ctx, "r", bbTTL)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range []*memory.Store{a, b, c} {
			if held, _ := s.Exists(ctx, "r"); !held {
				t.Errorf("store %d does not hold the lock", i)
			}
		}
		if l.Fence == 0 {
			t.Errorf("MultiLocker over FenceRaisers: Fence = 0; want > 0")
		}
		if want := start.Add(bbTTL - bbTTL/100 - 2*time.Millisecond); !l.ValidUntil.Equal(want) {
			t.Errorf("ValidUntil = %v; want %v", l.ValidUntil, want)
		}
		m.Unlock(ctx, l)
		l2, _ := m.TryLock(ctx, "r", bbTTL)
		if l2.Fence <= l.Fence {
			t.Errorf("second lock Fence = %d; want > %d", l2.Fence, l.Fence)
		}
		m.Unlock(ctx, l2)
		n := mustMulti(t, three, &lock.Options{NoFence: true})
		if l3, _ := n.TryLock(ctx, "r", bbTTL); l3.Fence != 0 {
			t.Errorf("NoFence Fence = %d; want 0", l3.Fence)
		}
	})
}

func TestSpecLkMultiQuorumWithOneFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, _, _, three := bbThree()
		m := mustMulti(t, three, nil)
		a.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		if _, err := m.TryLock(ctx, "r", bbTTL); err != nil {
			t.Errorf("TryLock with 1 of 3 stores failing = %v; want success", err)
		}
	})
}

func TestSpecLkMultiUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, b, c, three := bbThree()
		m := mustMulti(t, three, nil)
		a.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		b.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		_, err := m.TryLock(ctx, "r", bbTTL)
		if !errors.Is(err, lock.ErrUnavailable) || !errors.Is(err, errBBDown) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock with 2 of 3 stores failing = %v; want ErrUnavailable with store errors, not ErrNotAcquired", err)
		}
		var le *lock.Error
		if errors.As(err, &le) {
			names := map[string]bool{}
			for _, se := range le.Stores {
				names[se.Store] = true
				if se.Store == "a" && se.Index != 0 || se.Store == "b" && se.Index != 1 {
					t.Errorf("StoreError %+v: wrong index", se)
				}
			}
			if len(le.Stores) >= 2 && le.Stores[0].Index > le.Stores[1].Index {
				t.Errorf("Error.Stores = %+v; want store order", le.Stores)
			}
			if !names["a"] || !names["b"] {
				t.Errorf("Error.Stores = %+v; want a and b named", le.Stores)
			}
		} else {
			t.Errorf("error %T is not *lock.Error", err)
		}
		synctest.Wait()
		if held, _ := c.Exists(ctx, "r"); held {
			t.Errorf("failed attempt left the lock on store c")
		}
	})
}

func TestSpecLkMultiContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, b, c, three := bbThree()
		m := mustMulti(t, three, nil)
		a.Acquire(ctx, "r", "other", time.Hour)
		b.Acquire(ctx, "r", "other", time.Hour)
		_, err := m.TryLock(ctx, "r", bbTTL)
		if !errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("TryLock held on 2 of 3 stores = %v; want ErrNotAcquired", err)
		}
		synctest.Wait()
		if held, _ := c.Exists(ctx, "r"); held {
			t.Errorf("failed attempt left its lock on store c")
		}
		if held, err := m.IsLocked(ctx, "r"); err != nil || !held {
			t.Errorf("IsLocked = %v, %v; want true", held, err)
		}
		a.Release(ctx, "r", "other")
		if held, err := m.IsLocked(ctx, "r"); err != nil || !held {
			t.Errorf("IsLocked held on 1 of 3 stores = %v, %v; want true (any store)", held, err)
		}
	})
}

func TestSpecLkMultiUnlockNotHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, b, _, three := bbThree()
		m := mustMulti(t, three, nil)
		l, _ := m.TryLock(ctx, "r", bbTTL)
		a.Expire("r")
		b.Expire("r")
		if err := m.Unlock(ctx, l); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Unlock with 2 of 3 stores expired = %v; want ErrNotHeld", err)
		}
		l2, _ := m.TryLock(ctx, "s", bbTTL)
		a.Expire("s")
		if err := m.Unlock(ctx, l2); err != nil {
			t.Errorf("Unlock with 1 of 3 stores expired = %v; want nil", err)
		}
	})
}

func TestSpecLkMultiExtendNotHeldReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, b, c, three := bbThree()
		m := mustMulti(t, three, nil)
		l, _ := m.TryLock(ctx, "r", bbTTL)
		a.Expire("r")
		b.Expire("r")
		nl, err := m.Extend(ctx, l, bbTTL)
		if !errors.Is(err, lock.ErrNotHeld) || !nl.IsZero() {
			t.Errorf("Extend with 2 of 3 stores expired = %+v, %v; want zero, ErrNotHeld", nl, err)
		}
		synctest.Wait()
		if held, _ := c.Exists(ctx, "r"); held {
			t.Errorf("Extend reporting ErrNotHeld left the lock on store c")
		}
	})
}

func TestSpecLkMultiExtendRepairs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, _, _, three := bbThree()
		m := mustMulti(t, three, nil)
		l, _ := m.TryLock(ctx, "r", bbTTL)
		a.Expire("r")
		if _, err := m.Extend(ctx, l, bbTTL); err != nil {
			t.Fatalf("Extend with 1 of 3 expired = %v; want success", err)
		}
		synctest.Wait()
		if held, _ := a.Exists(ctx, "r"); !held {
			t.Errorf("after Extend, store a that lost the lock does not hold it again")
		}
	})
}

func TestSpecLkMultiHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		_, _, _, three := bbThree()
		m := mustMulti(t, three, &lock.Options{Holder: "node-1"})
		if h, held, err := m.Holder(ctx, "r"); err != nil || held || h != "" {
			t.Errorf("Holder of free = %q, %v, %v; want \"\", false, nil", h, held, err)
		}
		m.TryLock(ctx, "r", bbTTL)
		if h, held, err := m.Holder(ctx, "r"); err != nil || !held || h != "node-1" {
			t.Errorf("Holder = %q, %v, %v; want node-1, true, nil", h, held, err)
		}
	})
}

func TestSpecLkMultiForeignUnlockAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		_, _, _, three := bbThree()
		m1, m2 := mustMulti(t, three, nil), mustMulti(t, three, nil)
		l, _ := m1.TryLock(ctx, "r", bbTTL)
		if _, err := m1.Extend(ctx, l, bbTTL); err != nil { // settle background work
			t.Fatal(err)
		}
		data, _ := json.Marshal(l)
		var got lock.Lock
		json.Unmarshal(data, &got)
		if err := m2.Unlock(ctx, got); err != nil {
			t.Errorf("Unlock on another MultiLocker = %v; want nil", err)
		}
		if held, _ := m1.IsLocked(ctx, "r"); held {
			t.Errorf("IsLocked after foreign Unlock = true")
		}
		m1.TryLock(ctx, "s", bbTTL)
		if err := m1.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if held, _ := m2.IsLocked(ctx, "s"); held {
			t.Errorf("MultiLocker Shutdown left its lock held")
		}
		if _, err := m1.TryLock(ctx, "t", bbTTL); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("TryLock after Shutdown = %v; want ErrClosed", err)
		}
	})
}

// Locker.UnlockAll: "A locker counts a lock as held until the validity of
// its own latest acquisition or extension ends: a lock that another locker
// extended beyond that is left to expire (or to an Unlock of the Lock value)
// by both."
func TestSpecLkUnlockAllAfterForeignLongerExtend(t *testing.T) {
	bbUnlockAllAfterForeignLongerExtend(t, func() lock.Store { return memory.New() })
}

func TestSpecLkUnlockAllAfterForeignLongerExtendPlainStore(t *testing.T) {
	bbUnlockAllAfterForeignLongerExtend(t, func() lock.Store { return bbExtStore{bbPlainStore{memory.New()}} })
}

func bbUnlockAllAfterForeignLongerExtend(t *testing.T, newStore func() lock.Store) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := newStore()
		a, b := mustSingle(t, st, nil), mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "r", bbTTL)
		time.Sleep(bbTTL / 2)
		if _, err := b.Extend(ctx, l, time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(bbTTL) // a's own validity is over
		a.UnlockAll(ctx)
		if held, _ := st.Exists(ctx, "r"); !held {
			t.Errorf("acquirer's UnlockAll after its own validity released a lock another locker extended beyond it; want left to expire")
		}
		b.UnlockAll(ctx)
		if held, _ := st.Exists(ctx, "r"); !held {
			t.Errorf("UnlockAll of a locker that only extended the lock released it; want it to stay the acquirer's")
		}
	})
}

func TestSpecLkShutdownContextEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		a := mustSingle(t, st, nil)
		a.Lock(context.Background(), "r", bbTTL)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := a.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown with ended ctx = %v; want context.Canceled", err)
		}
		synctest.Wait()
		if held, _ := st.Exists(context.Background(), "r"); held {
			t.Errorf("Shutdown with ended ctx did not release the lock all the same")
		}
	})
}

func TestSpecLkErrorOps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		a := mustSingle(t, st, nil)
		l, _ := a.Lock(ctx, "r", bbTTL)
		st.Expire("r")
		check := func(what, op string, err error) {
			var le *lock.Error
			if !errors.As(err, &le) || le.Op != op || le.Resource != "r" {
				t.Errorf("%s error = %#v; want *Error{Op: %q, Resource: r}", what, err, op)
			}
		}
		_, err := a.Extend(ctx, l, bbTTL)
		check("Extend", "extend", err)
		uerr := a.Unlock(ctx, l)
		check("Unlock", "unlock", uerr)
		var le *lock.Error
		if errors.As(uerr, &le) && len(le.Stores) != 0 {
			t.Errorf("SingleLocker ErrNotHeld error lists stores %+v; want none (not held is an outcome, not a failure)", le.Stores)
		}
		mustSingle(t, st, nil).TryLock(ctx, "r", time.Hour)
		_, err = a.Lock(ctx, "r", bbTTL, lock.WithRetry(lock.NoRetry))
		check("Lock", "lock", err)
	})
}

func TestSpecLkMultiUnlockFailedStoreRetriedInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, _, _, three := bbThree()
		m := mustMulti(t, three, nil)
		l, _ := m.TryLock(ctx, "r", bbTTL)
		a.Inject(memory.Fault{Ops: memory.OpRelease, Err: errBBDown})
		if err := m.Unlock(ctx, l); err != nil {
			t.Errorf("Unlock with 1 of 3 releases failing = %v; want nil", err)
		}
		time.Sleep(time.Second)
		if held, _ := a.Exists(ctx, "r"); held {
			t.Errorf("failed store's copy not released in the background")
		}
	})
}

func TestSpecLkMultiUnlockUnavailableThenRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, b, _, three := bbThree()
		m := mustMulti(t, three, nil)
		l, _ := m.TryLock(ctx, "r", bbTTL)
		a.Inject(memory.Fault{Ops: memory.OpRelease, Err: errBBDown, Times: memory.Always})
		b.Inject(memory.Fault{Ops: memory.OpRelease, Err: errBBDown, Times: memory.Always})
		if err := m.Unlock(ctx, l); !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Unlock with 2 of 3 releases failing = %v; want ErrUnavailable", err)
		}
		a.ClearFaults()
		b.ClearFaults()
		if err := m.Unlock(ctx, l); err != nil {
			t.Errorf("Unlock retried after ErrUnavailable = %v; want nil (earlier releases count)", err)
		}
	})
}

func TestSpecLkMultiUnlockCtxEndsBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, c, three := bbThree()
		m := mustMulti(t, three, nil)
		l, _ := m.TryLock(context.Background(), "r", bbTTL)
		for _, s := range []*memory.Store{a, b, c} {
			s.Inject(memory.Fault{Ops: memory.OpRelease, Delay: time.Second})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := m.Unlock(ctx, l); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("multi Unlock with ctx ending first = %v; want DeadlineExceeded", err)
		}
		time.Sleep(bbTTL / 2)
		for i, s := range []*memory.Store{a, b, c} {
			if held, _ := s.Exists(context.Background(), "r"); held {
				t.Errorf("store %d still holds the lock; want released in the background", i)
			}
		}
	})
}

func TestSpecLkMultiBackfill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, _, _, three := bbThree()
		m := mustMulti(t, three, nil)
		a.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errBBDown})
		if _, err := m.TryLock(ctx, "r", bbTTL); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if held, _ := a.Exists(ctx, "r"); !held {
			t.Errorf("store that failed the acquisition not asked again in the background")
		}
	})
}

func TestSpecLkMultiStoreTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, b, _, three := bbThree()
		m := mustMulti(t, three, &lock.Options{StoreTimeout: 50 * time.Millisecond})
		a.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
		b.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
		start := time.Now()
		_, err := m.TryLock(ctx, "r", bbTTL)
		if !errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("TryLock with 2 of 3 stores hanging = %v; want ErrUnavailable", err)
		}
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Errorf("TryLock with hanging stores took %v; want at most the StoreTimeout 50ms", d)
		}
	})
}

func TestSpecLkMultiHolderUnsupported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stores := []lock.Store{bbPlainStore{memory.New()}, bbPlainStore{memory.New()}, memory.New()}
		m := mustMulti(t, stores, nil)
		if _, _, err := m.Holder(context.Background(), "r"); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Holder with 1 of 3 HolderReaders = %v; want errors.ErrUnsupported", err)
		}
	})
}

// bbSpan is a SpanHook that tags the call's context.
type bbSpanKey struct{}

type bbSpan struct {
	bbRecorder
	begins   []string
	untagged int
}

func (s *bbSpan) Begin(ctx context.Context, op, resource string) context.Context {
	s.mu.Lock()
	s.begins = append(s.begins, op)
	s.mu.Unlock()
	return context.WithValue(ctx, bbSpanKey{}, op)
}

func (s *bbSpan) Observe(ctx context.Context, e lock.Event) {
	s.bbRecorder.Observe(ctx, e)
	if ctx.Value(bbSpanKey{}) == nil {
		s.mu.Lock()
		s.untagged++
		s.mu.Unlock()
	}
}

func TestSpecLkSpanHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := &bbSpan{}
		a := mustSingle(t, memory.New(), &lock.Options{Hook: h})
		l, _ := a.Lock(ctx, "r", bbTTL)
		l, _ = a.Extend(ctx, l, bbTTL)
		a.Unlock(ctx, l)
		a.TryLock(ctx, "s", bbTTL)
		want := []string{"lock", "extend", "unlock", "trylock"}
		if fmt.Sprint(h.begins) != fmt.Sprint(want) {
			t.Errorf("SpanHook.Begin ops = %v; want %v", h.begins, want)
		}
		if h.untagged != 0 {
			t.Errorf("%d events observed without Begin's context; want all with it", h.untagged)
		}
	})
}
