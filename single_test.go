package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

func TestSingleLockUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		l := mustSingle(t, m, nil)

		a, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		if a.Resource != "r" || a.Token == "" || a.Fence == 0 || !a.Valid() {
			t.Fatalf("TryLock(r) = %+v; want resource r, a token, a fence and validity", a)
		}
		_, err = l.TryLock(ctx, "r", time.Second)
		wantIs(t, "TryLock(r) while held", err, lock.ErrNotAcquired)
		if locked, err := l.IsLocked(ctx, "r"); !locked || err != nil {
			t.Fatalf("IsLocked(r) = %v, %v; want true, nil", locked, err)
		}
		wantNil(t, "Unlock(a)", l.Unlock(ctx, a))
		wantIs(t, "Unlock(a) twice", l.Unlock(ctx, a), lock.ErrNotHeld)
		if locked, err := l.IsLocked(ctx, "r"); locked || err != nil {
			t.Fatalf("IsLocked(r) after Unlock = %v, %v; want false, nil", locked, err)
		}
		b, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r) after Unlock", err)
		if b.Fence <= a.Fence {
			t.Errorf("fence after re-acquisition = %d; want > %d", b.Fence, a.Fence)
		}
	})
}

// Validity is ttl − drift − granularity, counted from before the request
// was sent: exact on the fake clock.
func TestSingleValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 30 * time.Millisecond})
		l := mustSingle(t, m, nil)
		start := time.Now()
		got, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		// drift = 1s × 0.01 + 2ms = 12ms
		if want := start.Add(time.Second - 12*time.Millisecond); !got.ValidUntil.Equal(want) {
			t.Errorf("ValidUntil = start+%v; want start+%v", got.ValidUntil.Sub(start), want.Sub(start))
		}
		if rem := got.Remaining(); rem != 958*time.Millisecond {
			t.Errorf("Remaining() right after a 30ms acquisition = %v; want 958ms", rem)
		}

		g := coarse{memory.New(), time.Second}
		lg := mustSingle(t, g, &lock.Options{DriftFactor: 0.02})
		start = time.Now()
		got, err = lg.TryLock(ctx, "r", 5*time.Second)
		wantNil(t, "TryLock(r) on a store with 1s granularity", err)
		// drift = 5s × 0.02 + 2ms + 1s granularity
		if want := start.Add(5*time.Second - 1102*time.Millisecond); !got.ValidUntil.Equal(want) {
			t.Errorf("ValidUntil with 1s granularity = start+%v; want start+%v", got.ValidUntil.Sub(start), want.Sub(start))
		}
		_, err = lg.TryLock(ctx, "s", time.Second)
		wantIs(t, "TryLock(s, 1s) on a store with 1s granularity", err, lock.ErrInvalid)
	})
}

// An acquisition that answers after the lock's validity ran out is not a
// lock: the locker releases it and reports the store as unavailable.
func TestSingleTooSlowIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 2 * time.Second})
		l := mustSingle(t, m, nil)
		_, err := l.TryLock(t.Context(), "r", time.Second)
		wantIs(t, "TryLock(r) answered after 2s with a 1s TTL", err, lock.ErrUnavailable)
		noResidue(t, m)
	})
}

// A lost reply (the store applied the acquisition, the answer never came)
// is reported as a store failure, never as contention, and the locker
// releases by token so nothing is left locked.
func TestSingleLostReplyCleanedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, AfterApply: true})
		l := mustSingle(t, m, nil)
		_, err := l.TryLock(t.Context(), "r", time.Second)
		if errors.Is(err, lock.ErrNotAcquired) || !errors.Is(err, lock.ErrUnavailable) || !errors.Is(err, errConnReset) {
			t.Fatalf("TryLock(r) with a lost reply = %v; want ErrUnavailable wrapping the store's error, not ErrNotAcquired", err)
		}
		noResidue(t, m)
	})
}

func TestSingleExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		l := mustSingle(t, m, nil)
		a, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		time.Sleep(900 * time.Millisecond)
		start := time.Now()
		b, err := l.Extend(ctx, a, 2*time.Second)
		wantNil(t, "Extend(r, 2s)", err)
		if want := start.Add(2*time.Second - 22*time.Millisecond); !b.ValidUntil.Equal(want) {
			t.Errorf("ValidUntil after Extend = now+%v; want now+%v (from now, not from the old deadline)", b.ValidUntil.Sub(start), want.Sub(start))
		}
		if b.Token != a.Token || b.Fence != a.Fence {
			t.Errorf("Extend changed token or fence: %+v -> %+v", a, b)
		}
		time.Sleep(1500 * time.Millisecond) // past the first TTL, within the second
		if locked, _ := l.IsLocked(ctx, "r"); !locked {
			t.Fatal("IsLocked(r) = false after Extend, before the new TTL ran out")
		}
		m.Expire("r")
		_, err = l.Extend(ctx, b, time.Second)
		wantIs(t, "Extend(r) after it expired", err, lock.ErrNotHeld)
		if locked, _ := l.IsLocked(ctx, "r"); locked {
			t.Fatal("IsLocked(r) = true after Extend of an expired lock: it was re-created")
		}
	})
}

func TestSingleExtendUnsupported(t *testing.T) {
	ctx := context.Background()
	l := mustSingle(t, basic{memory.New()}, nil)
	a, err := l.TryLock(ctx, "r", time.Second)
	wantNil(t, "TryLock(r)", err)
	_, err = l.Extend(ctx, a, time.Second)
	wantIs(t, "Extend on a store without Extender", err, errors.ErrUnsupported)
	wantNil(t, "Unlock(r)", l.Unlock(ctx, a))
}

// A Lock is a plain value: it survives JSON and can be released by another
// locker (another process) over the same store.
func TestLockJSONAndForeignUnlock(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	holder := mustSingle(t, m, nil)
	a, err := holder.TryLock(ctx, "job", time.Minute)
	wantNil(t, "TryLock(job)", err)
	data, err := json.Marshal(a)
	wantNil(t, "json.Marshal(Lock)", err)
	var b lock.Lock
	wantNil(t, "json.Unmarshal(Lock)", json.Unmarshal(data, &b))
	if b.Resource != a.Resource || b.Token != a.Token || b.Fence != a.Fence || !b.ValidUntil.Equal(a.ValidUntil) {
		t.Fatalf("Lock after a JSON round trip = %+v; want %+v", b, a)
	}
	other := mustSingle(t, m, nil)
	wantNil(t, "Unlock(job) from another locker", other.Unlock(ctx, b))
	noResidue(t, m)
}

func TestFixedTokens(t *testing.T) {
	ctx := context.Background()
	l := mustSingle(t, memory.New(), &lock.Options{Tokens: tokengen.Fixed("worker-1")})
	a, err := l.TryLock(ctx, "r", time.Second)
	wantNil(t, "TryLock(r)", err)
	if a.Token != "worker-1" {
		t.Fatalf("token = %q; want the fixed token", a.Token)
	}
	_, err = l.TryLock(ctx, "r", time.Second)
	wantIs(t, "TryLock(r) again with the same fixed token (locks are not re-entrant)", err, lock.ErrNotAcquired)
}

// fenceCounting is a memory store that counts fenced and plain
// acquisitions.
type fenceCounting struct {
	*memory.Store
	fenced, plain atomic.Int64
}

func (f *fenceCounting) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	f.plain.Add(1)
	return f.Store.Acquire(ctx, r, tok, ttl)
}

func (f *fenceCounting) AcquireFenced(ctx context.Context, r, tok string, ttl time.Duration) (uint64, error) {
	f.fenced.Add(1)
	return f.Store.AcquireFenced(ctx, r, tok, ttl)
}

// A locker fences when the store can, unless told not to.
func TestNoFence(t *testing.T) {
	ctx := context.Background()
	for _, noFence := range []bool{false, true} {
		s := &fenceCounting{Store: memory.New()}
		l := mustSingle(t, s, &lock.Options{NoFence: noFence})
		held, err := l.TryLock(ctx, "r", time.Second)
		wantNil(t, "TryLock(r)", err)
		wantNil(t, "Unlock(r)", l.Unlock(ctx, held))
		if fenced := held.Fence != 0; fenced == noFence {
			t.Errorf("NoFence=%v: Fence = %d", noFence, held.Fence)
		}
		wantFenced, wantPlain := int64(1), int64(0)
		if noFence {
			wantFenced, wantPlain = 0, 1
		}
		if f, p := s.fenced.Load(), s.plain.Load(); f != wantFenced || p != wantPlain {
			t.Errorf("NoFence=%v: %d fenced and %d plain acquisitions; want %d and %d", noFence, f, p, wantFenced, wantPlain)
		}
	}
}

// failingTokens is a TokenGenerator that always fails, with errEntropy.
type failingTokens struct{}

var errEntropy = errors.New("entropy exhausted")

func (failingTokens) Token() (string, error) { return "", errEntropy }

func TestTokenGeneratorFailure(t *testing.T) {
	m := memory.New()
	l := mustSingle(t, m, &lock.Options{Tokens: failingTokens{}})
	_, err := l.Lock(context.Background(), "r", time.Second, lock.WithRetry(lock.NoRetry))
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Lock with a failing token generator = %v; want an error that is not contention", err)
	}
	noResidue(t, m)
}

func TestUnlockAllReleasesWhatIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := memory.New()
		l := mustSingle(t, m, nil)
		for _, r := range []string{"a", "b", "c"} {
			_, err := l.TryLock(ctx, r, time.Minute)
			wantNil(t, "TryLock("+r+")", err)
		}
		done, err := l.TryLock(ctx, "d", time.Minute)
		wantNil(t, "TryLock(d)", err)
		wantNil(t, "Unlock(d)", l.Unlock(ctx, done))
		_, err = l.TryLock(ctx, "e", time.Second)
		wantNil(t, "TryLock(e)", err)
		time.Sleep(2 * time.Second) // e expires: UnlockAll does not report it
		wantNil(t, "UnlockAll()", l.UnlockAll(ctx))
		noResidue(t, m)
	})
}

func TestUnlockAllReportsStoreFailures(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	l := mustSingle(t, m, nil)
	_, err := l.TryLock(ctx, "a", time.Minute)
	wantNil(t, "TryLock(a)", err)
	m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset})
	err = l.UnlockAll(ctx)
	wantIs(t, "UnlockAll() with a failing store", err, errConnReset)
	wantNil(t, "UnlockAll() again", l.UnlockAll(ctx)) // the failed lock stayed on the list
	noResidue(t, m)
}

// The cleanup after an ambiguous acquisition tries its release again when
// it fails (on another connection broken by the same fault, say), within
// the store timeout, rather than leave the lock held until its TTL.
func TestSingleCleanupRetriesFailedRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New()
		m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, AfterApply: true})
		m.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: 2})
		l := mustSingle(t, m, nil)
		_, err := l.TryLock(t.Context(), "res", time.Minute)
		wantIs(t, "TryLock(res) with a lost reply", err, lock.ErrUnavailable)
		noResidue(t, m)

		// A release that keeps failing is given up after a few tries.
		c := newCounting("c")
		c.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errConnReset, AfterApply: true})
		c.Inject(memory.Fault{Ops: memory.OpRelease, Err: errConnReset, Times: memory.Always})
		l = mustSingle(t, c, nil)
		_, err = l.TryLock(t.Context(), "res", time.Minute)
		wantIs(t, "TryLock(res) with a lost reply and failing releases", err, lock.ErrUnavailable)
		if n := c.calls.Load(); n != 1+4 {
			t.Errorf("the store got %d calls; want the acquisition and 4 releases", n)
		}
		c.ClearFaults()
		c.Expire("res")
	})
}

// An extension answered after the validity it would give has run out is
// no extension: both lockers report the stores unavailable, as for an
// acquisition answered too late, and neither returns an expired lock.
func TestExtendAnsweredPastItsValidity(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "multi"}[multi], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms, ls := memStores(3)
				opts := &lock.Options{StoreTimeout: 5 * time.Second}
				var l lock.Locker = mustSingle(t, ls[0], opts)
				if multi {
					l = mustMulti(t, ls, opts)
				}
				held, err := l.TryLock(t.Context(), "r", time.Minute)
				wantNil(t, "TryLock(r)", err)
				for _, m := range ms {
					m.Inject(memory.Fault{Ops: memory.OpExtend, Delay: 2 * time.Second})
				}
				next, err := l.Extend(t.Context(), held, time.Second)
				if !errors.Is(err, lock.ErrUnavailable) {
					t.Fatalf("Extend(r, 1s) answered after 2s = %+v, %v; want ErrUnavailable", next, err)
				}
				if !next.IsZero() {
					t.Errorf("Extend(r, 1s) answered after 2s returned %+v; want the zero Lock", next)
				}
			})
		})
	}
}
