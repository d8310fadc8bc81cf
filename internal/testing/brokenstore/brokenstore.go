// Package brokenstore holds lock stores broken on purpose, for positive
// controls: a checker that must catch a broken store is run on one of
// these and must fail. Each is a memory store (package stores/memory)
// with one or two methods replaced, so that it breaks one sentence of the
// lock.Store contract and keeps the others.
//
// The conformance kit's own tests run every rule on the store that breaks
// it; the contention checkers' tests use the ones that break mutual
// exclusion or fencing. Write a new broken store here, once, and name it
// for what it does wrong.
package brokenstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Store is a memory store whose methods can be replaced one by one. A
// method whose replacement is nil is the memory store's. Start makes the
// call through the Store's own methods, replaced or not, so a store that
// breaks Acquire breaks acquisitions started with Start too.
type Store struct {
	mem    atomic.Pointer[memory.Store]
	f      Funcs
	fences atomic.Uint64 // fences of a replaced Acquire
}

// Funcs are the replacements of a Store's methods.
type Funcs struct {
	Acquire          func(ctx context.Context, resource, token string, ttl time.Duration) error
	AcquireFenced    func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error)
	Release          func(ctx context.Context, resource, token string) error
	Extend           func(ctx context.Context, resource, token string, ttl time.Duration) error
	Exists           func(ctx context.Context, resource string) (bool, error)
	TTL              func(ctx context.Context, resource string) (time.Duration, bool, error)
	WaitRelease      func(ctx context.Context, resource string) error
	RaiseFence       func(ctx context.Context, resource string, fence uint64) error
	Start            func(ctx context.Context, c lock.Call, done func(uint64, error))
	ValidateResource func(resource string) error
}

var (
	_ lock.FenceRaiser       = (*Store)(nil)
	_ lock.Extender          = (*Store)(nil)
	_ lock.TTLReader         = (*Store)(nil)
	_ lock.Waiter            = (*Store)(nil)
	_ lock.Starter           = (*Store)(nil)
	_ lock.ResourceValidator = (*Store)(nil)
)

// New returns a store over a new memory store with the methods in f
// replaced. build, if not nil, is called with the store and the memory
// store before New returns, to fill f with closures that need them.
func New(build func(s *Store, mem *memory.Store, f *Funcs)) *Store {
	s := &Store{}
	m := memory.New()
	s.mem.Store(m)
	if build != nil {
		build(s, m, &s.f)
	}
	return s
}

// Mem returns the memory store underneath.
func (s *Store) Mem() *memory.Store { return s.mem.Load() }

// Acquire implements lock.Store.
func (s *Store) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if s.f.Acquire != nil {
		return s.f.Acquire(ctx, resource, token, ttl)
	}
	return s.Mem().Acquire(ctx, resource, token, ttl)
}

// AcquireFenced implements lock.Fencer. Unless it is replaced itself, it
// takes the lock with Acquire (replaced or not), and with a replaced
// Acquire draws the fence from a counter of the Store's own.
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	switch {
	case s.f.AcquireFenced != nil:
		return s.f.AcquireFenced(ctx, resource, token, ttl)
	case s.f.Acquire != nil:
		return s.fenceAfter(s.f.Acquire(ctx, resource, token, ttl))
	}
	return s.Mem().AcquireFenced(ctx, resource, token, ttl)
}

// fenceAfter returns a fresh fence if err is nil: one from a counter of
// the Store's own, shared by every resource.
func (s *Store) fenceAfter(err error) (uint64, error) {
	if err != nil {
		return 0, err
	}
	return s.fences.Add(1), nil
}

// Release implements lock.Store.
func (s *Store) Release(ctx context.Context, resource, token string) error {
	if s.f.Release != nil {
		return s.f.Release(ctx, resource, token)
	}
	return s.Mem().Release(ctx, resource, token)
}

// Extend implements lock.Extender.
func (s *Store) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if s.f.Extend != nil {
		return s.f.Extend(ctx, resource, token, ttl)
	}
	return s.Mem().Extend(ctx, resource, token, ttl)
}

// Exists implements lock.Store.
func (s *Store) Exists(ctx context.Context, resource string) (bool, error) {
	if s.f.Exists != nil {
		return s.f.Exists(ctx, resource)
	}
	return s.Mem().Exists(ctx, resource)
}

// TTL implements lock.TTLReader.
func (s *Store) TTL(ctx context.Context, resource string) (time.Duration, bool, error) {
	if s.f.TTL != nil {
		return s.f.TTL(ctx, resource)
	}
	return s.Mem().TTL(ctx, resource)
}

// WaitRelease implements lock.Waiter.
func (s *Store) WaitRelease(ctx context.Context, resource string) error {
	if s.f.WaitRelease != nil {
		return s.f.WaitRelease(ctx, resource)
	}
	return s.Mem().WaitRelease(ctx, resource)
}

// RaiseFence implements lock.FenceRaiser.
func (s *Store) RaiseFence(ctx context.Context, resource string, fence uint64) error {
	if s.f.RaiseFence != nil {
		return s.f.RaiseFence(ctx, resource, fence)
	}
	return s.Mem().RaiseFence(ctx, resource, fence)
}

// Start implements lock.Starter: it makes the call at once through the
// Store's own methods.
func (s *Store) Start(ctx context.Context, c lock.Call, done func(uint64, error)) {
	if s.f.Start != nil {
		s.f.Start(ctx, c, done)
		return
	}
	done(c.Run(ctx, s))
}

// ValidateResource implements lock.ResourceValidator: every name is valid
// unless it is replaced.
func (s *Store) ValidateResource(resource string) error {
	if s.f.ValidateResource != nil {
		return s.f.ValidateResource(resource)
	}
	return nil
}

// Basic returns a store with s's three required methods only: no optional
// capability.
func Basic(s lock.Store) lock.Store { return basic{s} }

type basic struct{ s lock.Store }

func (b basic) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	return b.s.Acquire(ctx, resource, token, ttl)
}

func (b basic) Release(ctx context.Context, resource, token string) error {
	return b.s.Release(ctx, resource, token)
}

func (b basic) Exists(ctx context.Context, resource string) (bool, error) {
	return b.s.Exists(ctx, resource)
}

// holders records the token of the last successful acquisition of each
// resource, for broken stores that need to know who holds a lock.
type holders struct {
	mu sync.Mutex
	m  map[string]string
}

func (h *holders) set(resource, token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]string)
	}
	h.m[resource] = token
}

func (h *holders) get(resource string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[resource]
}

// tracked replaces f.Acquire and f.AcquireFenced by the memory store's,
// recording each holder in h.
func tracked(mem *memory.Store, f *Funcs, h *holders) {
	f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
		fence, err := mem.AcquireFenced(ctx, resource, token, ttl)
		if err == nil {
			h.set(resource, token)
		}
		return fence, err
	}
	f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		_, err := f.AcquireFenced(ctx, resource, token, ttl)
		return err
	}
}

// FencesOnly returns a store with s's three required methods and its
// fences (AcquireFenced, RaiseFence) only: no TTL reader, so that a rule
// must tell a lock's TTL by its expiry.
func FencesOnly(s lock.FenceRaiser) lock.Store {
	st, ok := s.(lock.Store)
	if !ok {
		panic("brokenstore.FencesOnly: not a lock.Store")
	}
	return fencesOnly{basic{st}, s}
}

type fencesOnly struct {
	basic
	f lock.FenceRaiser
}

func (s fencesOnly) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	return s.f.AcquireFenced(ctx, resource, token, ttl)
}

func (s fencesOnly) RaiseFence(ctx context.Context, resource string, fence uint64) error {
	return s.f.RaiseFence(ctx, resource, fence)
}
