package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// counting wraps a memory store and counts the calls that reach it, to
// prove that bad input is refused before anything is sent.
type counting struct {
	*memory.Store
	calls atomic.Int64
}

func newCounting(name string) *counting { return &counting{Store: memory.New(memory.WithName(name))} }

func (c *counting) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	c.calls.Add(1)
	return c.Store.Acquire(ctx, r, tok, ttl)
}

func (c *counting) AcquireFenced(ctx context.Context, r, tok string, ttl time.Duration) (uint64, error) {
	c.calls.Add(1)
	return c.Store.AcquireFenced(ctx, r, tok, ttl)
}

func (c *counting) Release(ctx context.Context, r, tok string) error {
	c.calls.Add(1)
	return c.Store.Release(ctx, r, tok)
}

func (c *counting) Extend(ctx context.Context, r, tok string, ttl time.Duration) error {
	c.calls.Add(1)
	return c.Store.Extend(ctx, r, tok, ttl)
}

func (c *counting) Exists(ctx context.Context, r string) (bool, error) {
	c.calls.Add(1)
	return c.Store.Exists(ctx, r)
}

// basic is a store with no optional capability: no extension, no waiting,
// no fencing.
type basic struct{ s *memory.Store }

func (b basic) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	return b.s.Acquire(ctx, r, tok, ttl)
}
func (b basic) Release(ctx context.Context, r, tok string) error   { return b.s.Release(ctx, r, tok) }
func (b basic) Exists(ctx context.Context, r string) (bool, error) { return b.s.Exists(ctx, r) }
func (b basic) String() string                                     { return b.s.String() }

// coarse is a memory store that reports a TTL granularity, like memcached.
type coarse struct {
	*memory.Store
	g time.Duration
}

func (c coarse) TTLGranularity() time.Duration { return c.g }

// memStores returns n named memory stores.
func memStores(n int) ([]*memory.Store, []lock.Store) {
	ms := make([]*memory.Store, n)
	ls := make([]lock.Store, n)
	for i := range ms {
		ms[i] = memory.New(memory.WithName(fmt.Sprintf("m%d", i)))
		ls[i] = ms[i]
	}
	return ms, ls
}

func mustSingle(t *testing.T, s lock.Store, o *lock.Options) *lock.SingleLocker {
	t.Helper()
	l, err := lock.NewSingle(s, o)
	if err != nil {
		t.Fatalf("NewSingle() = %v", err)
	}
	return l
}

func mustMulti(t *testing.T, s []lock.Store, o *lock.Options) *lock.MultiLocker {
	t.Helper()
	l, err := lock.NewMulti(s, o)
	if err != nil {
		t.Fatalf("NewMulti() = %v", err)
	}
	return l
}

// noResidue fails the test if any store still holds a lock.
func noResidue(t *testing.T, stores ...*memory.Store) {
	t.Helper()
	for _, s := range stores {
		if r := s.Resources(); len(r) > 0 {
			t.Errorf("%s still holds %q; want nothing left locked", s, r)
		}
	}
}

func wantIs(t *testing.T, call string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s = %v; want an error matching %v", call, err, target)
	}
}

func wantNil(t *testing.T, call string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s = %v; want nil", call, err)
	}
}

var errConnReset = errors.New("connection reset by peer")

// storesFunc returns n named memory stores, as memStores does, and the
// stores to give a locker.
type storesFunc func(n int) ([]*memory.Store, []lock.Store)

// eachPath runs a multi-store test on both paths of a MultiLocker: with
// memory stores, which start calls themselves (lock.Starter), and with the
// same stores behind a wrapper that hides Start, so that the locker runs
// each store call in a goroutine of its own.
func eachPath(t *testing.T, test func(t *testing.T, memStores storesFunc)) {
	t.Run("starter", func(t *testing.T) { test(t, memStores) })
	t.Run("goroutines", func(t *testing.T) {
		test(t, func(n int) ([]*memory.Store, []lock.Store) {
			ms, ls := memStores(n)
			for i, m := range ms {
				ls[i] = withoutStart{m, m, m, m}
			}
			return ms, ls
		})
	})
}

// withoutStart is a memory store without lock.Starter.
type withoutStart struct {
	lock.Store
	lock.Extender
	lock.Waiter
	fmt.Stringer
}

// Start makes the call through c's own methods, so that it is counted
// (the embedded store's Start would bypass them).
func (c *counting) Start(ctx context.Context, call lock.Call, done func(uint64, error)) {
	done(call.Run(ctx, c))
}
