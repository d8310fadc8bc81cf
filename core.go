package lock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/tokengen"
)

// core is what both lockers share: options, validation, validity
// accounting and the set of held locks.
type core struct {
	tokens       TokenGenerator
	driftFactor  float64
	storeTimeout time.Duration
	retry        Retry
	granularity  time.Duration // largest TTL granularity among the stores
	noFence      bool
	validators   []ResourceValidator
	held         heldSet
	closed       atomic.Bool
	obs          observer
}

// storeRef is a store with its capabilities resolved once.
type storeRef struct {
	Store
	index   int
	name    string
	ext     Extender
	fencer  Fencer
	waiter  Waiter
	starter Starter
}

// init sets c up from o (nil: the defaults).
func (c *core) init(op string, o *Options) error {
	if o == nil {
		o = &Options{}
	}
	c.tokens = o.Tokens
	c.driftFactor = o.DriftFactor
	c.storeTimeout = o.StoreTimeout
	c.retry = DefaultRetry
	c.noFence = o.NoFence
	c.obs = newObserver(o.Hook)
	c.held.init()
	if c.tokens == nil {
		c.tokens = tokengen.Random{}
	}
	switch {
	case o.DriftFactor < 0 || o.DriftFactor >= 0.5:
		return invalidf(op, "", "Options.DriftFactor is %v: want a value in [0, 0.5)", o.DriftFactor)
	case o.DriftFactor == 0:
		c.driftFactor = defaultDriftFactor
	}
	switch {
	case o.StoreTimeout < 0:
		return invalidf(op, "", "Options.StoreTimeout is %v: want > 0", o.StoreTimeout)
	case o.StoreTimeout == 0:
		c.storeTimeout = defaultStoreTimeout
	}
	if o.Retry != nil {
		if err := o.Retry.validate(); err != nil {
			return invalidf(op, "", "Options.%v", err)
		}
		c.retry = *o.Retry
	}
	return nil
}

// resolve wraps each store with its capabilities and records the stores'
// granularity and validators in c.
func (c *core) resolve(op string, stores []Store) ([]storeRef, error) {
	refs := make([]storeRef, len(stores))
	for i, s := range stores {
		if s == nil || isNilPointer(s) {
			if len(stores) == 1 {
				return nil, invalidf(op, "", "store is nil")
			}
			return nil, invalidf(op, "", "stores[%d] is nil", i)
		}
		for j := 0; j < i; j++ {
			if sameStore(stores[j], s) {
				return nil, invalidf(op, "", "stores[%d] and stores[%d] are the same store", j, i)
			}
		}
		r := storeRef{Store: s, index: i, name: storeName(i, len(stores), s)}
		r.ext, _ = s.(Extender)
		if !c.noFence {
			r.fencer, _ = s.(Fencer)
		}
		r.waiter, _ = s.(Waiter)
		r.starter, _ = s.(Starter)
		if g, ok := s.(Granular); ok && g.TTLGranularity() > c.granularity {
			c.granularity = g.TTLGranularity()
		}
		if v, ok := s.(ResourceValidator); ok {
			c.validators = append(c.validators, v)
		}
		refs[i] = r
	}
	return refs, nil
}

func isNilPointer(s Store) bool {
	v := reflect.ValueOf(s)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

func sameStore(a, b Store) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
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

// validUntil is the validity end of a lock of ttl whose acquisition or
// extension started at start.
func (c *core) validUntil(start time.Time, ttl time.Duration) time.Time {
	return start.Add(c.validity(ttl))
}

// checkResource validates a resource name.
func (c *core) checkResource(op, resource string) error {
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
	case ttl <= c.drift(ttl):
		return invalidf(op, resource, "ttl %v leaves no validity after the clock-drift and granularity allowance of %v", ttl, c.drift(ttl))
	}
	return nil
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
	if c.closed.Load() {
		return &Error{Op: op, Resource: resource, Err: ErrClosed}
	}
	if err := c.checkResource(op, resource); err != nil {
		return err
	}
	return c.checkTTL(op, resource, ttl)
}

// checkHeld validates a Lock passed to Unlock or Extend.
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
	return *o.retry, nil
}

// token makes a new owner token.
func (c *core) token() (string, *Error) {
	t, err := c.tokens.Token()
	if err != nil {
		return "", &Error{Err: fmt.Errorf("%w: token generator: %w", ErrUnavailable, err)}
	}
	if t == "" {
		return "", &Error{Err: fmt.Errorf("%w: token generator returned an empty token", ErrInvalid)}
	}
	return t, nil
}

// cleanupContext returns the context for a cleanup call after ctx may have
// ended: not canceled with ctx, bounded by the store timeout.
func (c *core) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.storeTimeout)
}

// unlockAll releases every held lock through unlock.
func (c *core) unlockAll(ctx context.Context, unlock func(context.Context, Lock) error) error {
	if err := checkContext(ctx, "unlockall", ""); err != nil {
		return err
	}
	var errs []error
	for _, l := range c.held.snapshot() {
		if err := unlock(ctx, l); err != nil && !errors.Is(err, ErrNotHeld) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// defaultQuorum is used when Options.Quorum is nil.
var defaultQuorum Quorum = quorum.Majority{}

// observer returns the locker's hook wrapper, for Run.
func (c *core) observer() observer { return c.obs }
