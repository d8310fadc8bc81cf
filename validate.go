package lock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

func isNilPointer(s any) bool {
	v := reflect.ValueOf(s)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// sameStore reports whether a and b are the same store. A comparable type
// can hold an uncomparable value (a struct embedding a Store whose value
// is a struct with a map, say), on which == panics: such stores are not
// known to be the same.
func sameStore(a, b Store) (same bool) {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

func storeName(i, n int, s Store) string {
	if st, ok := s.(fmt.Stringer); ok {
		return st.String()
	}
	if n == 1 {
		return fmt.Sprintf("store (%T)", s)
	}
	return fmt.Sprintf("store[%d] (%T)", i, s)
}

// drift is the validity lost to clock drift and granularity for ttl.
func (c *core) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*c.driftFactor) + driftConstant + c.granularity
}

// validity is how long a lock of ttl is valid from the start of its
// acquisition or extension.
func (c *core) validity(ttl time.Duration) time.Duration { return ttl - c.drift(ttl) }

// validityKnown reports whether validity is that of the locker's locks,
// not a guess: false for a locker built on a Locker of another kind,
// whose options it cannot see.
func (c *core) validityKnown() bool { return !c.guessed }

// validUntil is the validity end of a lock of ttl whose acquisition or
// extension started at start.
func (c *core) validUntil(start inproc.Instant, ttl time.Duration) time.Time {
	return c.clock.After(start, c.validity(ttl))
}

// storeTTL is the TTL the stores keep a lock of ttl for: ttl and the lock
// delay (see Options.LockDelay).
func (c *core) storeTTL(ttl time.Duration) time.Duration { return ttl + c.lockDelay }

// heldBeyond is how long after its validity a store may still hold a
// lock of ttl whose last store answered elapsed after the acquisition or
// extension began: a store's clock may run slow by the drift allowance,
// and a coarse one round the TTL up; and the stores keep it for the lock
// delay beyond its TTL.
func (c *core) heldBeyond(elapsed, ttl time.Duration) time.Duration {
	return elapsed + 2*c.drift(ttl) + c.lockDelay
}

// checkResource validates a resource name.
func (c *core) checkResource(op, resource string) error {
	if c.eng == nil {
		return errNotMade(op, resource)
	}
	if resource == "" {
		return invalidf(op, resource, "empty resource name")
	}
	for _, v := range c.validators {
		if err := v.ValidateResource(resource); err != nil {
			if !errors.Is(err, ErrInvalid) {
				err = fmt.Errorf("%w: %w", ErrInvalid, err)
			}
			return &Error{Op: op, Resource: resource, Err: err}
		}
	}
	return nil
}

// checkTTL validates a TTL: positive, not absurd, and long enough to leave
// validity once drift and granularity are taken off.
func (c *core) checkTTL(op, resource string, ttl time.Duration) error {
	switch {
	case ttl <= 0:
		return invalidf(op, resource, "ttl is %v: want > 0", ttl)
	case ttl > MaxTTL:
		return invalidf(op, resource, "ttl is %v: want at most %v", ttl, MaxTTL)
	case ttl > MaxTTL-c.lockDelay:
		return invalidf(op, resource, "ttl is %v: with Options.LockDelay %v, want at most %v", ttl, c.lockDelay, MaxTTL-c.lockDelay)
	case ttl <= c.drift(ttl):
		return invalidf(op, resource, "ttl %v leaves no validity after the clock-drift and granularity allowance of %v", ttl, c.drift(ttl))
	}
	return nil
}

// errNotMade is what a zero locker (a SingleLocker, MultiLocker,
// Semaphore or RWLocker side not made by its constructor) reports.
func errNotMade(op, resource string) error {
	return invalidf(op, resource, "a zero locker, not made by NewSingle, NewMulti, NewSemaphore or NewRWLocker")
}

// checkContext refuses a nil context, which would otherwise panic deep
// in a store call.
func checkContext(ctx context.Context, op, resource string) error {
	if ctx == nil {
		return invalidf(op, resource, "nil context")
	}
	return nil
}

// checkQuery validates the arguments of IsLocked.
func (c *core) checkQuery(ctx context.Context, op, resource string) error {
	if err := checkContext(ctx, op, resource); err != nil {
		return err
	}
	return c.checkResource(op, resource)
}

// checkLock validates the arguments of Lock and TryLock.
func (c *core) checkLock(ctx context.Context, op, resource string, ttl time.Duration) error {
	if err := checkContext(ctx, op, resource); err != nil {
		return err
	}
	if c.gate.isShut() {
		return &Error{Op: op, Resource: resource, Err: ErrClosed}
	}
	if err := c.checkResource(op, resource); err != nil {
		return err
	}
	return c.checkTTL(op, resource, ttl)
}

// checkHeld validates a Lock passed to Unlock or Extend: a name the
// stores refuse (a Lock built or decoded by hand) is bad input, not a
// store failure.
func (c *core) checkHeld(ctx context.Context, op string, l Lock) error {
	switch {
	case ctx == nil:
		return invalidf(op, l.Resource, "nil context")
	case l.IsZero():
		return invalidf(op, "", "zero Lock")
	case l.Resource == "":
		return invalidf(op, "", "Lock has an empty resource name")
	case l.Token == "":
		return invalidf(op, l.Resource, "Lock has an empty token")
	}
	return c.checkResource(op, l.Resource)
}

// enterExtend validates the arguments of Extend and admits the call
// through the gate; if it returns nil, the caller must leave the gate.
func (c *core) enterExtend(ctx context.Context, op string, l Lock, ttl time.Duration) error {
	if err := c.checkHeld(ctx, op, l); err != nil {
		return err
	}
	if err := c.checkTTL(op, l.Resource, ttl); err != nil {
		return err
	}
	if !c.gate.enter() {
		return &Error{Op: op, Resource: l.Resource, Err: ErrClosed}
	}
	return nil
}

// policy returns the retry policy for one Lock call.
func (c *core) policy(op, resource string, o callOptions) (Retry, error) {
	if o.retry == nil {
		return c.retry, nil
	}
	if err := o.retry.validate(); err != nil {
		return Retry{}, invalidf(op, resource, "%v", err)
	}
	return marked(*o.retry), nil
}
