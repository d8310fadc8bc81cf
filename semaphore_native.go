package lock

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
	"weak"
)

// A native semaphore is a SingleLocker, with the options of the locker it
// was built on, over an adapter that makes the store's permits look like
// locks: Acquire takes a permit, Release frees it, Extend extends it,
// Exists says whether any is held, WaitRelease waits for a free permit.
// Retries, validity, cleanup after an unknown outcome and hooks are the
// SingleLocker's. The locker it was built on counts it among its
// dependents: its Shutdown shuts the semaphore down too, and its
// UnlockAll releases the semaphore's permits, as both do for a semaphore
// made of its plain locks.

type nativeSemaphore struct {
	*SingleLocker
	p Permitter
}

func newNativeSemaphore(base *SingleLocker, p Permitter, limit int) (*nativeSemaphore, error) {
	a := permitStore{p: p, store: base.store.Store, name: base.store.name, limit: limit, gran: base.granularity}
	var st Store = a
	if w, ok := p.(PermitWaiter); ok {
		st = waitingPermitStore{a, w}
	}
	opts := base.opts
	l, err := NewSingle(st, &opts)
	if err != nil {
		return nil, err
	}
	l.held.perToken = true
	// Its calls end when base shuts down, as a semaphore of plain locks'
	// do: base's Shutdown shuts the gates of the dependents it knows of,
	// and one built on base once it is shut refuses to take anything.
	l.gate.follow(&base.gate)
	base.dependents.add(&l.core)
	// Built on a base shut already (or being shut: its gate is shut before
	// it reads its dependents), it is shut too, so that its Extend is
	// refused with ErrClosed as base's is, not only its Lock.
	if base.gate.isShut() {
		l.gate.shut()
	}
	return &nativeSemaphore{SingleLocker: l, p: p}, nil
}

// dependents are the lockers built on a locker that hold locks of their
// own in its store, apart from it: the native semaphores over a
// SingleLocker. The locker's Shutdown shuts their gates and its
// UnlockAll and Shutdown release what they hold (see core.unlockAll).
//
// They are held weakly, so that a semaphore built and dropped is not kept
// for the locker's lifetime: one that is no longer reachable holds no
// permit (while a permit may be held, its held set's janitor, a timer,
// keeps it reachable), and is forgotten.
type dependents struct {
	mu      sync.Mutex
	cores   []weak.Pointer[core]
	pruneAt int // forget the unreachable ones when cores reaches this length
}

func (d *dependents) add(c *core) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.cores) >= d.pruneAt {
		d.cores = slices.DeleteFunc(d.cores, func(p weak.Pointer[core]) bool { return p.Value() == nil })
		d.pruneAt = 2*len(d.cores) + 8
	}
	d.cores = append(d.cores, weak.Make(c))
}

// live returns the dependents still reachable.
func (d *dependents) live() []*core {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*core
	for _, p := range d.cores {
		if c := p.Value(); c != nil {
			out = append(out, c)
		}
	}
	return out
}

func (n *nativeSemaphore) permits(ctx context.Context, resource string) (int, error) {
	const op = "permits"
	if err := n.checkQuery(ctx, op, resource); err != nil {
		return 0, err
	}
	t0 := n.obs.start()
	held, err := n.p.Permits(ctx, resource)
	n.obs.storeCall(ctx, op, resource, &n.store, "permits", t0, err)
	if err != nil {
		return 0, n.fail(ctx, op, resource, err)
	}
	return held, nil
}

// permitStore is a Permitter's permits on resources as a Store of locks.
type permitStore struct {
	p     Permitter
	store Store // the Permitter, for its resource validation
	name  string
	limit int
	gran  time.Duration
}

var (
	_ Fencer            = permitStore{}
	_ Extender          = permitStore{}
	_ Granular          = permitStore{}
	_ ResourceValidator = permitStore{}
	_ Waiter            = waitingPermitStore{}
)

func (a permitStore) String() string { return a.name }

func (a permitStore) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	_, err := a.AcquireFenced(ctx, resource, token, ttl)
	return err
}

// AcquireFenced takes a permit. A limit mismatch also matches ErrInvalid:
// the caller's limit is wrong, and the locker must not retry it.
func (a permitStore) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	fence, err := a.p.AcquirePermit(ctx, resource, a.stored(token), a.limit, ttl)
	return fence, asLimitError(err)
}

func (a permitStore) Release(ctx context.Context, resource, token string) error {
	return a.p.ReleasePermit(ctx, resource, a.stored(token))
}

func (a permitStore) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	return a.p.ExtendPermit(ctx, resource, a.stored(token), ttl)
}

// stored is the token under which the store keeps the permit of a Lock
// with token: prefixed with the limit, so that a semaphore of another
// limit, presenting the same Lock, finds no permit held under it.
func (a permitStore) stored(token string) string {
	return strconv.Itoa(a.limit) + "/" + token
}

func (a permitStore) Exists(ctx context.Context, resource string) (bool, error) {
	n, err := a.p.Permits(ctx, resource)
	return n > 0, err
}

func (a permitStore) TTLGranularity() time.Duration { return a.gran }

func (a permitStore) ValidateResource(resource string) error {
	if v, ok := a.store.(ResourceValidator); ok {
		return v.ValidateResource(resource)
	}
	return nil
}

// waitingPermitStore is a permitStore whose Permitter can wait.
type waitingPermitStore struct {
	permitStore
	w PermitWaiter
}

// WaitRelease waits for a free permit.
func (a waitingPermitStore) WaitRelease(ctx context.Context, resource string) error {
	return a.w.WaitPermit(ctx, resource)
}
