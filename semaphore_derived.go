package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

// derived is a core whose locks stand for locks of another Locker on
// derived names — a semaphore's slots, a read-write lock's marks — which
// it releases and extends there, reporting errors under the resource's
// own name. It keeps the locks it took in its held set, one per token.
type derived struct {
	core
	// mark returns the locker and the lock on a derived name that l, a
	// lock of this locker, stands for.
	mark func(op string, l Lock) (Locker, Lock, error)
	// extended, if set, runs after each successful extension.
	extended func(ctx context.Context, l Lock, ttl time.Duration)
}

// initDerived sets d up as the core of eng, a locker built on locker,
// and returns what else it can use of locker (see adopt).
func (d *derived) initDerived(eng engine, locker Locker) (waitFor func(ctx context.Context, op, name string) bool, stores []storeRef, validators []ResourceValidator) {
	_ = d.init("new", nil, eng) // cannot fail with the defaults
	d.held.perToken = true
	return d.adopt(locker)
}

// giveBack releases l, a lock this locker took on a derived name and
// will not hand out, with under.Unlock: not canceled with ctx, within a
// store timeout, and if that fails again in the background (over a
// locker of ours, whose tokens it knows to be unique), since a lock left
// behind keeps the others out until its TTL runs out.
func (d *derived) giveBack(ctx context.Context, under Locker, l Lock) {
	if d.release(ctx, under, l) {
		return
	}
	if d.gate.base != nil {
		d.later(ctx, func(ctx context.Context) bool { return d.release(ctx, under, l) })
	}
}

// release makes one release of l for giveBack, within a store timeout,
// and reports whether it is settled: released, not held, or refused for
// good.
func (d *derived) release(ctx context.Context, under Locker, l Lock) bool {
	cctx, cancel := d.cleanupContext(ctx)
	defer cancel()
	err := under.Unlock(cctx, l)
	return err == nil || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrInvalid)
}

// markOf implements stander: l stands for the lock mark returns.
func (d *derived) markOf(l Lock) (Locker, Lock, bool) {
	under, inner, err := d.mark("", l)
	return under, inner, err == nil
}

// Unlock implements [Locker] and engine.
func (d *derived) Unlock(ctx context.Context, l Lock) error {
	const op = "unlock"
	if err := d.checkHeld(ctx, op, l); err != nil {
		return err
	}
	under, inner, err := d.mark(op, l)
	if err != nil {
		return err // not one of its locks: refused before anything is sent
	}
	// The hook sees the call under the resource's name, and within it the
	// release of the mark under the derived name.
	ctx = d.obs.begin(ctx, op, l.Resource)
	t0 := d.obs.start()
	err = under.Unlock(ctx, inner)
	if err == nil || errors.Is(err, ErrNotHeld) {
		d.held.remove(l)
	}
	err = renamed(err, l.Resource)
	if d.obs.on() {
		d.obs.emit(ctx, Event{Kind: EventReleased, Op: op, Resource: l.Resource, Lock: l, Duration: inproc.Since(t0), Err: err})
	}
	return err
}

// Extend implements [Locker].
func (d *derived) Extend(ctx context.Context, l Lock, ttl time.Duration) (Lock, error) {
	const op = "extend"
	if err := d.enterExtend(ctx, op, l, ttl); err != nil {
		return Lock{}, err
	}
	defer d.gate.leave()
	under, inner, err := d.mark(op, l)
	if err != nil {
		return Lock{}, err
	}
	if d.gate.isShut() || d.unextendable != nil {
		// The locker underneath is shut down or cannot extend: it refuses
		// the call before anything is sent (or finds that l is not its
		// lock), and the hook is told nothing, as of its own refusals.
		_, err := under.Extend(ctx, inner, ttl)
		if errors.Is(err, ErrNotHeld) {
			d.held.remove(l)
		}
		return Lock{}, renamed(err, l.Resource)
	}
	ctx = d.obs.begin(ctx, op, l.Resource)
	start := inproc.Now()
	extended, err := under.Extend(ctx, inner, ttl)
	elapsed := inproc.Since(start)
	switch {
	case err == nil:
		if d.extended != nil {
			d.extended(ctx, l, ttl)
		}
		l.ValidUntil, l.Fence = extended.ValidUntil, extended.Fence
		d.held.extended(l, d.heldBeyond(elapsed, ttl))
	case errors.Is(err, ErrNotHeld):
		d.held.remove(l)
	case !errors.Is(err, ErrInvalid) && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, ErrClosed):
		// Not refused before anything was sent: the outcome is unknown,
		// the stores may hold the mark for ttl from now, and UnlockAll
		// and Shutdown must still release it.
		d.mayHold(l, start, ttl, elapsed)
	}
	err = renamed(err, l.Resource)
	if d.obs.on() {
		d.obs.emit(ctx, Event{Kind: EventExtended, Op: op, Resource: l.Resource, Lock: l, Duration: elapsed, Err: err})
	}
	if err != nil {
		return Lock{}, err
	}
	return l, nil
}

// adopt sets up c, a locker built on locker, with locker's retry policy
// and validity accounting when it is one of ours, its Lock calls ending
// as soon as locker shuts down, and returns what else
// it can use of it: a function that waits for the release of a lock on
// a name (nil if it cannot wait), its stores and their name rules.
func (c *core) adopt(locker Locker) (waitFor func(ctx context.Context, op, name string) bool, stores []storeRef, validators []ResourceValidator) {
	var base *core
	switch l := locker.(type) {
	case *SingleLocker:
		base, stores = &l.core, []storeRef{l.store}
		waitFor = func(ctx context.Context, op, name string) bool { return l.wait(ctx, op, name, nil) }
	case *MultiLocker:
		base, stores = &l.core, l.stores
		waitFor = func(ctx context.Context, op, name string) bool { return l.waitHolding(ctx, op, name) }
	default:
		c.guessed = true // its validity accounting is its own
		return nil, nil, nil
	}
	c.gate.follow(&base.gate) // its Shutdown ends our waits
	// It never queues: it waits only where a store notifies releases.
	c.retry, c.canWait, c.notifies = base.retry, base.notifies, base.notifies
	c.fixedTokens = base.fixedTokens // its locks' tokens: no late release of a token that is not unique
	c.driftFactor, c.granularity, c.storeTimeout = base.driftFactor, base.granularity, base.storeTimeout
	c.lockDelay = base.lockDelay
	c.obs = base.obs
	c.unextendable = base.unextendable
	if !c.canWait {
		waitFor = nil
	}
	return waitFor, stores, base.validators
}

// derivedNames validates the names a locker derives from a resource with
// the stores' rules.
type derivedNames struct {
	names func(resource string) []string
	of    []ResourceValidator
}

func (d derivedNames) ValidateResource(resource string) error {
	for _, name := range d.names(resource) {
		for _, v := range d.of {
			if err := v.ValidateResource(name); err != nil {
				return fmt.Errorf("%w: derived name %q: %s", ErrInvalid, name, strings.TrimPrefix(trimPrefix(err), "invalid argument: "))
			}
		}
	}
	return nil
}

// asError is err as the error of an attempt, whose Op and Resource the
// caller sets.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Err: e.Err, Stores: e.Stores}
	}
	return &Error{Err: err}
}

// renamed returns err, an error of the locker about a derived name, as an
// error about resource.
func renamed(err error, resource string) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Resource = resource
		return &c
	}
	return err
}

// limitError is a limit mismatch: it matches ErrLimitMismatch and
// ErrInvalid (the caller's limit is wrong: retrying does not help).
type limitError struct{ err error }

func (e limitError) Error() string   { return trimPrefix(e.err) }
func (e limitError) Unwrap() []error { return []error{ErrInvalid, e.err} }

// asLimitError returns err as a limitError if it reports a limit mismatch
// that does not match ErrInvalid yet, else err.
func asLimitError(err error) error {
	if errors.Is(err, ErrLimitMismatch) && !errors.Is(err, ErrInvalid) {
		return limitError{err}
	}
	return err
}
