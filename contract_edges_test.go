package lock_test

// The lockers' edges: huge retry delays, typed nil
// options, names the stores refuse on Unlock and Extend, and what
// FromContext reports once Run's lock is lost.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// alwaysHeld is a store whose every resource is held by another owner.
type alwaysHeld struct{}

func (alwaysHeld) Acquire(context.Context, string, string, time.Duration) error {
	return lock.ErrNotAcquired
}
func (alwaysHeld) Release(context.Context, string, string) error { return lock.ErrNotHeld }
func (alwaysHeld) Exists(context.Context, string) (bool, error)  { return true, nil }

// Backoff doubles the delay up to MaxDelay whatever the durations: a
// doubling past the largest Duration must not wrap round to a negative
// wait (which made Lock panic in rand.Int64N).
func TestRetryBackoffSaturates(t *testing.T) {
	for _, r := range []lock.Retry{
		{Attempts: 4, Delay: math.MaxInt64 / 3, MaxDelay: math.MaxInt64},
		{Attempts: 70, Delay: time.Hour, MaxDelay: math.MaxInt64},
	} {
		t.Run(fmt.Sprint(r.Attempts), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				locker := mustSingle(t, alwaysHeld{}, nil)
				call := fmt.Sprintf("Lock(WithRetry(%+v))", r)
				var err error
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s panicked: %v; want ErrNotAcquired", call, p)
						}
					}()
					_, err = locker.Lock(context.Background(), "r", time.Hour, lock.WithRetry(r))
				}()
				wantIs(t, call, err, lock.ErrNotAcquired)
			})
		})
	}
}

type nilPtrHook struct{ events []lock.Event }

func (h *nilPtrHook) Observe(_ context.Context, e lock.Event) { h.events = append(h.events, e) }

type nilPtrTokens struct{ prefix string }

func (g *nilPtrTokens) Token() (string, error) { return g.prefix + "t", nil }

type nilPtrQuorum struct{ extra int }

func (q *nilPtrQuorum) Met(granted, total int) bool { return granted > total/2+q.extra }

// A nil pointer in an option's interface is an invalid option, refused by
// the constructor and named, as a nil store is: not a panic at the first
// call.
func TestTypedNilOptionsRefused(t *testing.T) {
	_, stores := memStores(3)
	cases := []struct {
		option string
		run    func() error
	}{
		{"Options.Hook", func() error {
			_, err := lock.NewSingle(stores[0], &lock.Options{Hook: (*nilPtrHook)(nil)})
			return err
		}},
		{"Options.Tokens", func() error {
			_, err := lock.NewSingle(stores[0], &lock.Options{Tokens: (*nilPtrTokens)(nil)})
			return err
		}},
		{"Options.Tokens", func() error {
			_, err := lock.NewMulti(stores, &lock.Options{Tokens: (*nilPtrTokens)(nil)})
			return err
		}},
		{"Options.Quorum", func() error {
			_, err := lock.NewMulti(stores, &lock.Options{Quorum: (*nilPtrQuorum)(nil)})
			return err
		}},
	}
	for _, c := range cases {
		call := "New(" + c.option + ": a nil pointer)"
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return c.run()
		}()
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), c.option) {
			t.Errorf("%s = %v; want ErrInvalid naming %s", call, err, c.option)
		}
	}
}

// limited is a counting memory store that cannot hold names longer than
// 8 bytes (as Redis cannot hold those beyond its MaxResourceLen).
type limited struct{ *counting }

func (limited) ValidateResource(resource string) error {
	if len(resource) > 8 {
		return fmt.Errorf("%w: resource name of %d bytes: at most 8", lock.ErrInvalid, len(resource))
	}
	return nil
}

// A Lock whose name the stores cannot hold (built or decoded by hand) is
// bad input to Unlock and Extend as it is to Lock: ErrInvalid, nothing
// sent — not ErrNotHeld or ErrUnavailable from a store.
func TestUnlockExtendCheckResourceNames(t *testing.T) {
	ctx := context.Background()
	single := limited{newCounting("s")}
	multi := []*counting{newCounting("a"), newCounting("b"), newCounting("c")}
	lockers := map[string]lock.Locker{
		"single": mustSingle(t, single, nil),
		"multi":  mustMulti(t, []lock.Store{limited{multi[0]}, limited{multi[1]}, limited{multi[2]}}, nil),
	}
	long := lock.Lock{Resource: "much-too-long", Token: "t", ValidUntil: time.Now().Add(time.Minute)}
	for name, l := range lockers {
		err := l.Unlock(ctx, long)
		if !errors.Is(err, lock.ErrInvalid) || errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("%s: Unlock(Lock{Resource: %q}) = %v; want ErrInvalid alone", name, long.Resource, err)
		}
		_, err = l.Extend(ctx, long, time.Minute)
		if !errors.Is(err, lock.ErrInvalid) || errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("%s: Extend(Lock{Resource: %q}) = %v; want ErrInvalid alone", name, long.Resource, err)
		}
	}
	for _, c := range append(multi, single.counting) {
		if n := c.calls.Load(); n != 0 {
			t.Errorf("store %s received %d calls for a name it cannot hold; want none", c, n)
		}
	}
}

// Once Run's lock is lost, FromContext's lock is no longer valid: "so
// that FromContext(ctx).Valid() tells whether the lock may still be
// relied on". UnlockAll and Shutdown release it before its validity
// ends, and an extension that finds it not held says it is gone.
func TestFromContextInvalidOnceLost(t *testing.T) {
	losses := map[string]func(l *lock.SingleLocker, st *memory.Store){
		"UnlockAll": func(l *lock.SingleLocker, _ *memory.Store) {
			wantNil(t, "UnlockAll()", l.UnlockAll(context.Background()))
		},
		"Shutdown": func(l *lock.SingleLocker, _ *memory.Store) {
			wantNil(t, "Shutdown()", l.Shutdown(context.Background()))
		},
		"extension not held": func(_ *lock.SingleLocker, st *memory.Store) {
			st.Expire("r")
		},
	}
	for name, lose := range losses {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := memory.New()
				l := mustSingle(t, st, nil)
				err := lock.Run(context.Background(), l, "r", time.Minute, func(ctx context.Context, _ lock.Lock) error {
					if k, ok := lock.FromContext(ctx); !ok || !k.Valid() {
						t.Errorf("FromContext(ctx) before the loss = %+v, %v; want a valid lock", k, ok)
					}
					lose(l, st)
					<-ctx.Done()
					wantIs(t, "context.Cause(ctx)", context.Cause(ctx), lock.ErrLost)
					if k, _ := lock.FromContext(ctx); k.Valid() {
						t.Errorf("FromContext(ctx).Valid() after the loss (%v) = true, %v left; want false", context.Cause(ctx), k.Remaining())
					}
					return nil
				})
				wantIs(t, "Run()", err, lock.ErrLost)
			})
		})
	}
}

// eventLog is a Hook that keeps every event.
type eventLog struct {
	mu     sync.Mutex
	events []lock.Event
}

func (r *eventLog) Observe(_ context.Context, e lock.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Holder's store calls reach the hook as the Event documents them: Op and
// StoreOp "holder".
func TestHolderEventNamed(t *testing.T) {
	ctx := context.Background()
	h := &eventLog{}
	l := mustSingle(t, memory.New(), &lock.Options{Hook: h})
	if _, _, err := l.Holder(ctx, "r"); err != nil {
		t.Fatalf("Holder(r) = %v; want nil", err)
	}
	if len(h.events) != 1 || h.events[0].Kind != lock.EventStoreCall || h.events[0].Op != "holder" || h.events[0].StoreOp != "holder" {
		t.Errorf("Holder(r) events = %+v; want one store call with Op and StoreOp \"holder\"", h.events)
	}
}

// failingStore fails every call.
type failingStore struct{}

func (failingStore) Acquire(context.Context, string, string, time.Duration) error {
	return errConnReset
}
func (failingStore) Release(context.Context, string, string) error { return errConnReset }
func (failingStore) Exists(context.Context, string) (bool, error)  { return false, errConnReset }

// StoreError.Store names a store without a String method by its type,
// and by its index too among several stores.
func TestStoreErrorNames(t *testing.T) {
	ctx := context.Background()
	var le *lock.Error
	_, err := mustSingle(t, failingStore{}, nil).TryLock(ctx, "r", time.Second)
	if !errors.As(err, &le) || len(le.Stores) != 1 || le.Stores[0].Store != "store (lock_test.failingStore)" {
		t.Errorf("single TryLock(r) = %v; want the store named \"store (lock_test.failingStore)\"", err)
	}
	m := mustMulti(t, []lock.Store{failingStore{}, alwaysHeld{}, memory.New(memory.WithName("m"))}, nil)
	_, err = m.TryLock(ctx, "r", time.Second)
	if !errors.As(err, &le) || len(le.Stores) != 2 || le.Stores[0].Store != "store[0] (lock_test.failingStore)" || le.Stores[1].Store != "store[1] (lock_test.alwaysHeld)" {
		t.Errorf("multi TryLock(r) = %v; want stores named \"store[0] (lock_test.failingStore)\" and \"store[1] (lock_test.alwaysHeld)\"", err)
	}
}

// FromContext works on the contexts that RunOnce and an election's term
// give, as its doc says.
func TestFromContextOfRunOnceAndTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := mustSingle(t, memory.New(), nil)
		err := lock.RunOnce(ctx, l, "job", time.Minute, func(ctx context.Context, held lock.Lock) error {
			if k, ok := lock.FromContext(ctx); !ok || k.Token != held.Token || !k.Valid() {
				t.Errorf("FromContext(RunOnce's ctx) = %+v, %v; want the job's lock, valid", k, ok)
			}
			return nil
		})
		wantNil(t, "RunOnce()", err)
		e, err := lock.NewElection(l, "role", time.Minute)
		wantNil(t, "NewElection()", err)
		term, err := e.Campaign(ctx)
		wantNil(t, "Campaign()", err)
		if k, ok := lock.FromContext(term.Context()); !ok || k != term.Lock() {
			t.Errorf("FromContext(term.Context()) = %+v, %v; want the term's lock %+v", k, ok, term.Lock())
		}
		wantNil(t, "Resign()", term.Resign(ctx))
		if _, ok := lock.FromContext(ctx); ok {
			t.Errorf("FromContext(context.Background()) = _, true; want false")
		}
		var nilCtx context.Context // nil: the bad input under test
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("FromContext(nil) panicked: %v; want _, false", p)
				}
			}()
			if _, ok := lock.FromContext(nilCtx); ok {
				t.Errorf("FromContext(nil) = _, true; want false")
			}
		}()
	})
}

// mapStore is a store whose value cannot be compared (it holds a map).
type mapStore struct{ m map[string]string }

func (mapStore) Acquire(context.Context, string, string, time.Duration) error { return nil }
func (mapStore) Release(context.Context, string, string) error                { return nil }
func (mapStore) Exists(context.Context, string) (bool, error)                 { return false, nil }

// embeddingStore is comparable as a type, whatever the Store it holds.
type embeddingStore struct{ lock.Store }

// NewMulti's check for a store given twice must not panic on stores whose
// type is comparable but whose value is not.
func TestNewMultiUncomparableStores(t *testing.T) {
	stores := []lock.Store{embeddingStore{mapStore{m: map[string]string{}}}, embeddingStore{mapStore{m: map[string]string{}}}, embeddingStore{mapStore{m: map[string]string{}}}}
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		_, err = lock.NewMulti(stores, nil)
	}()
	wantNil(t, "NewMulti(three stores embedding an uncomparable store)", err)
}

// A ttl too short to leave any validity is named as the fault by Run and
// RunOnce, as by Lock: not an ExtendEvery the caller never passed.
func TestRunTooShortTTLNamed(t *testing.T) {
	ctx := context.Background()
	c := newCounting("c")
	l := mustSingle(t, c, nil)
	fn := func(context.Context, lock.Lock) error { return nil }
	for _, ttl := range []time.Duration{time.Millisecond, 2 * time.Millisecond} {
		for call, err := range map[string]error{
			fmt.Sprintf("Run(ttl %v)", ttl):     lock.Run(ctx, l, "r", ttl, fn),
			fmt.Sprintf("RunOnce(ttl %v)", ttl): lock.RunOnce(ctx, l, "r", ttl, fn),
		} {
			if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "leaves no validity") || strings.Contains(err.Error(), "ExtendEvery") {
				t.Errorf("%s = %v; want ErrInvalid saying the ttl leaves no validity", call, err)
			}
		}
	}
	// 2.5ms leaves 475µs of validity, shorter than the shortest interval
	// (1ms): Run would lose the lock before its first extension.
	ttl := 2500 * time.Microsecond
	for call, err := range map[string]error{
		"Run(ttl 2.5ms)":     lock.Run(ctx, l, "r", ttl, fn),
		"RunOnce(ttl 2.5ms)": lock.RunOnce(ctx, l, "r", ttl, fn),
	} {
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "ttl 2.5ms") {
			t.Errorf("%s = %v; want ErrInvalid naming the ttl, too short to be extended", call, err)
		}
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("%d store calls after a ttl that leaves no validity; want none", n)
	}
}
