package lock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock/internal/inproc"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/tokengen"
)

// core is what both lockers share: options, validation, validity
// accounting, the set of held locks, and the public half of a [Locker] —
// Lock, TryLock, UnlockAll and Shutdown, with their events — over the
// engine that differs between one store and a quorum of them.
type core struct {
	eng          engine
	canWait      bool        // some store can notify releases (Waiter), or the locker queues in its one store's line (Queuer): see waits
	notifies     bool        // some store can notify releases (Waiter)
	queuer       queuer      // the engine, if it can queue acquisitions: see queues
	noQueue      atomic.Bool // its store said it cannot queue (errors.ErrUnsupported)
	tokens       TokenGenerator
	fixedTokens  bool // tokens are tokengen.Fixed: not unique (see later)
	driftFactor  float64
	storeTimeout time.Duration
	retry        Retry
	granularity  time.Duration // largest TTL granularity among the stores
	noFence      bool
	lockDelay    time.Duration // Options.LockDelay
	guessed      bool          // built on a Locker of another kind: validity is the default options' guess (see adopt)
	validators   []ResourceValidator
	held         heldSet
	local        inproc.Store // SingleLocker: its store, which records its locks itself (see heldLocks)
	owner        uint64       // this locker, to local
	gate         gate
	dependents   dependents // lockers built on this one that hold locks of their own (native semaphores)
	clock        inproc.Clock
	obs          observer
	// unextendable, if set, refuses an Extend that the stores cannot make
	// (errors.ErrUnsupported), before anything is sent: the locker's own,
	// or for a locker built on another, that one's.
	unextendable func(op, resource string) error
}

// engine is the half of a locker that talks to its stores.
type engine interface {
	// attempt makes one acquisition attempt with a fresh token and, on
	// success, records the lock in the held set. It returns when the
	// attempt started (zero if it failed before anything was sent), how
	// long it took until it was decided, and on failure an *Error whose Op
	// and Resource the caller fills in.
	attempt(ctx context.Context, op, resource string, ttl time.Duration) (l Lock, start inproc.Instant, took time.Duration, e *Error)
	// wait waits, within ctx, for resource to be released after the
	// attempt that returned last found it held. It reports whether a
	// release woke it (false: ctx ended, or no store could wait).
	wait(ctx context.Context, op, resource string, last *Error) bool
	// Unlock is the locker's Unlock.
	Unlock(ctx context.Context, l Lock) error
}

// queuer is an engine that can make a queued attempt (a SingleLocker over
// a Queuer): it takes the lock, or gets in the store's line for resource
// and waits there for up to wait for the lock to be handed to it; it
// returns as attempt does (ErrNotAcquired if wait passed first), and
// whether it got in line. Its hook hears of an attempt that got in line
// as of attempt number attempt refused, a wait, and attempt+1.
type queuer interface {
	queued(ctx context.Context, op, resource string, ttl, wait time.Duration, attempt int) (l Lock, start inproc.Instant, took time.Duration, inLine bool, e *Error)
}

// queues reports whether the locker's waits are queued attempts.
func (c *core) queues() bool { return c.queuer != nil && !c.noQueue.Load() }

// waits reports whether Lock can wait for a release between attempts: a
// store notifies releases (Waiter), or the locker queues its attempts in
// its store's line, as long as the store has not said it cannot. A
// locker that cannot wait sleeps, polling at first with its default
// policy (see DefaultRetry).
func (c *core) waits() bool {
	return c.canWait && (c.queuer == nil || c.notifies || !c.noQueue.Load())
}

// hearing is what the engine's wait after an attempt can hear.
type hearing struct {
	some   bool // a release can end the wait
	all    bool // every release that would let the next attempt succeed ends it
	stores bool // every store that refused the attempt can notify releases
}

// hearing returns what the engine's wait after the attempt that
// returned last can hear: everything, unless the engine says otherwise
// (hearer): a MultiLocker whose refusing stores do not all notify, a
// semaphore of plain locks that watches only some of its slots, a
// read-write lock's side waiting for readers to leave or for a writer's
// intent.
func (c *core) hearing(last *Error) hearing {
	if h, ok := c.eng.(hearer); ok {
		return h.hears(last)
	}
	return hearing{some: true, all: true, stores: true}
}

// hearer is an engine whose wait hears some releases only (see
// core.hearing).
type hearer interface {
	hears(last *Error) hearing
}

// notifyAll reports whether every one of stores can notify releases.
func notifyAll(stores []storeRef) bool {
	for _, s := range stores {
		if s.waiter == nil {
			return false
		}
	}
	return true
}

// storeRef is a store with its capabilities resolved once.
type storeRef struct {
	Store
	index   int
	name    string
	ext     Extender
	fencer  Fencer
	waiter  Waiter
	queuer  Queuer
	starter Starter
}

// init sets c up from o (nil: the defaults) for the engine eng.
func (c *core) init(op string, o *Options, eng engine) error {
	if o == nil {
		o = &Options{}
	}
	// A nil pointer in an interface is not nil: it would panic at the
	// first call, far from the mistake.
	for _, opt := range []struct {
		name string
		v    any
	}{{"Tokens", o.Tokens}, {"Quorum", o.Quorum}, {"Hook", o.Hook}} {
		if opt.v != nil && isNilPointer(opt.v) {
			return invalidf(op, "", "Options.%s is a nil %T", opt.name, opt.v)
		}
	}
	c.eng = eng
	c.tokens = o.Tokens
	c.driftFactor = o.DriftFactor
	c.storeTimeout = o.StoreTimeout
	c.retry = marked(DefaultRetry)
	c.noFence = o.NoFence
	c.lockDelay = o.LockDelay
	c.obs = newObserver(o.Hook)
	c.gate.init()
	if c.tokens == nil {
		c.tokens = tokengen.Random{}
	}
	var fixed tokengen.Fixed
	if fixed, c.fixedTokens = c.tokens.(tokengen.Fixed); c.fixedTokens && fixed == "" {
		return invalidf(op, "", "Options.Tokens is an empty tokengen.Fixed: every Lock would fail")
	}
	if o.Holder != "" {
		if err := checkHolder(o.Holder); err != nil {
			return invalidf(op, "", "Options.Holder %v", err)
		}
		c.tokens = holderTokens(c.tokens, o.Holder)
	}
	switch {
	case !(o.DriftFactor >= 0 && o.DriftFactor < 0.5): // NaN too
		return invalidf(op, "", "Options.DriftFactor is %v: want a value in [0, 0.5)", o.DriftFactor)
	case o.DriftFactor == 0:
		c.driftFactor = defaultDriftFactor
	}
	switch {
	case o.StoreTimeout < 0:
		return invalidf(op, "", "Options.StoreTimeout is %v: want > 0", o.StoreTimeout)
	case o.StoreTimeout > MaxTTL:
		return invalidf(op, "", "Options.StoreTimeout is %v: want at most %v", o.StoreTimeout, MaxTTL)
	case o.StoreTimeout == 0:
		c.storeTimeout = defaultStoreTimeout
	}
	if o.LockDelay < 0 || o.LockDelay >= MaxTTL {
		return invalidf(op, "", "Options.LockDelay is %v: want a duration in [0, %v)", o.LockDelay, MaxTTL)
	}
	if o.Retry != nil {
		if err := o.Retry.validate(); err != nil {
			return invalidf(op, "", "Options.%v", err)
		}
		c.retry = marked(*o.Retry)
	}
	return nil
}

// resolve wraps each store with its capabilities and records the stores'
// granularity, validators and ability to wait in c, which decides the
// default retry policy (see DefaultRetry).
func (c *core) resolve(op string, stores []Store, o *Options) ([]storeRef, error) {
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
		r.queuer, _ = s.(Queuer)
		r.starter, _ = s.(Starter)
		// Only a SingleLocker waits in a store's line (Queuer), and only
		// with tokens of its own: NewSingle says.
		c.notifies = c.notifies || r.waiter != nil
		c.canWait = c.notifies
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

// Lock implements [Locker].
func (c *core) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...LockOption) (Lock, error) {
	const op = "lock"
	if err := c.checkLock(ctx, op, resource, ttl); err != nil {
		return Lock{}, err
	}
	retry, err := c.policy(op, resource, collect(opts))
	if err != nil {
		return Lock{}, err
	}
	return c.acquire(ctx, op, resource, ttl, retry)
}

// TryLock implements [Locker].
func (c *core) TryLock(ctx context.Context, resource string, ttl time.Duration) (Lock, error) {
	const op = "trylock"
	if err := c.checkLock(ctx, op, resource, ttl); err != nil {
		return Lock{}, err
	}
	return c.acquire(ctx, op, resource, ttl, NoRetry)
}

func (c *core) acquire(ctx context.Context, op, resource string, ttl time.Duration, retry Retry) (Lock, error) {
	if !c.gate.enter() {
		return Lock{}, &Error{Op: op, Resource: resource, Err: ErrClosed}
	}
	defer c.gate.leave()
	if retry.retries() {
		l, e := c.retryLoop(ctx, op, resource, ttl, retry)
		if e != nil {
			return Lock{}, e
		}
		return l, nil
	}
	// One attempt (TryLock's): the retry loop without its bookkeeping,
	// telling the hook what the loop would.
	if c.obs.on() {
		ctx = c.obs.begin(ctx, op, resource)
		c.obs.emit(ctx, Event{Kind: EventAttempt, Op: op, Resource: resource, Attempt: 1})
	}
	l, start, took, e := c.eng.attempt(ctx, op, resource, ttl)
	switch {
	case e == nil:
		e = c.closedMeanwhile(ctx, op, resource, l)
	case ended(ctx):
		e = canceled(ctx, e)
	}
	if e != nil {
		e.Op, e.Resource = op, resource
	}
	if c.obs.on() {
		c.obs.attempted(ctx, op, resource, l, start, took, e)
	}
	if e != nil {
		return Lock{}, e
	}
	return l, nil
}

// closedMeanwhile releases l and returns ErrClosed if Shutdown began while
// l was being taken (Shutdown waits for the call to leave before it
// releases what the locker holds), and returns nil otherwise.
func (c *core) closedMeanwhile(ctx context.Context, op, resource string, l Lock) *Error {
	if !c.gate.isShut() {
		return nil
	}
	uctx, cancel := c.cleanupContext(ctx) // if it fails, Shutdown releases l
	_ = c.eng.Unlock(uctx, l)
	cancel()
	return &Error{Op: op, Resource: resource, Err: ErrClosed}
}

// UnlockAll implements [Locker]. It ends the contexts of the Runs and
// election terms that hold the locks first.
func (c *core) UnlockAll(ctx context.Context) error {
	const op = "unlockall"
	if err := checkContext(ctx, op, ""); err != nil {
		return err
	}
	if c.eng == nil {
		return errNotMade(op, "")
	}
	return named(ctx, op, c.unlockAll(ctx, "UnlockAll", nil, false))
}

// named returns the failures of the releases made by UnlockAll or
// Shutdown (op) as an *Error of op, so that the error names the call
// that failed, as every locker error does; the releases' own errors,
// each naming its resource, are its cause — unless ctx ended meanwhile:
// the cause is then ctx's error, the releases' only told in its text, so
// that one outcome matches (a release that failed before ctx ended, and
// one that ctx ended, would match two).
func named(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case ended(ctx):
		return &Error{Op: op, Err: fmt.Errorf("%w (and releasing: %v)", ctxErr(ctx), err)}
	}
	return &Error{Op: op, Err: err}
}

// unlockAll releases every held lock for op, and those of the locker's
// dependents, ending the contexts of their holders first with a cause
// that wraps ErrLost and err. If bounded, each release is made within
// ctx without its cancellation, bounded by the store timeout (see
// cleanupContext): ctx has ended.
func (c *core) unlockAll(ctx context.Context, op string, err error, bounded bool) error {
	var errs []error
	for _, l := range c.heldLocks() {
		endKeepers(ctx, c, l, op, err)
		uctx, cancel := ctx, context.CancelFunc(func() {})
		if bounded {
			uctx, cancel = c.cleanupContext(ctx)
		}
		uerr := c.eng.Unlock(uctx, l)
		cancel()
		if uerr != nil && !errors.Is(uerr, ErrNotHeld) {
			errs = append(errs, uerr)
		}
	}
	for _, d := range c.dependents.live() {
		errs = append(errs, d.unlockAll(ctx, op, err, bounded))
	}
	return errors.Join(errs...)
}

// Shutdown implements [Locker]. It refuses new Lock, TryLock and Extend
// calls, ends the Lock calls waiting for a held resource with ErrClosed,
// waits for the calls under way to return (for one store timeout at
// most: a call still under way then releases what it takes as it
// returns), and releases every lock the locker holds, ending first the
// contexts of the Runs and election terms that hold them. If ctx ends
// first, it releases them all the same, each release bounded by the store
// timeout, and returns ctx's error. A SingleLocker's Shutdown does the
// same for the semaphores built natively on it (see [Semaphore]), and its
// UnlockAll releases their permits.
func (c *core) Shutdown(ctx context.Context) error {
	const op = "shutdown"
	if err := checkContext(ctx, op, ""); err != nil {
		return err
	}
	if c.eng == nil {
		return errNotMade(op, "")
	}
	// Every gate is shut before any is waited for: the calls under way
	// on the locker and its dependents share one store timeout.
	c.gate.shut()
	defer c.stopJanitors()
	gates := []*gate{&c.gate}
	for _, d := range c.dependents.live() {
		d.gate.shut()
		gates = append(gates, &d.gate)
	}
	drain(ctx, c.storeTimeout, gates...)
	if ctx.Err() == nil {
		uerr := c.unlockAll(ctx, "Shutdown", ErrClosed, false)
		if ctx.Err() == nil {
			return named(ctx, op, uerr)
		}
		// ctx ended while the locks were being released: those it left
		// held are released all the same below, each within the store
		// timeout, as when it ends first.
	}
	err := &Error{Op: op, Err: ctxErr(ctx)}
	if uerr := c.unlockAll(context.WithoutCancel(ctx), "Shutdown", ErrClosed, true); uerr != nil {
		err.Err = fmt.Errorf("%w (and releasing: %v)", err.Err, uerr)
	}
	return err
}

// stopJanitors stops the timers that sweep the held sets of the locker
// and its dependents: a locker shut down takes no more locks, and a timer
// set for the expiry of a long lock would keep it reachable until then.
// A lock recorded later (a call that was under way) sets it again.
func (c *core) stopJanitors() {
	c.held.stop()
	for _, d := range c.dependents.live() {
		d.held.stop()
	}
}

// owners numbers the lockers whose store records their locks (core.local).
var owners atomic.Uint64

// heldLocks returns the locks that the locker acquired and a store may
// still hold: those its store records (core.local), or those of the held
// set.
func (c *core) heldLocks() []Lock {
	if c.local == nil {
		return c.held.snapshot()
	}
	held := c.local.HeldBy(c.owner)
	locks := make([]Lock, len(held))
	for i, h := range held {
		// The store keeps the lock until its TTL and the lock delay have
		// run out: its validity is the TTL's.
		ttl := h.Expires.Sub(h.Start) - c.lockDelay
		locks[i] = Lock{Resource: h.Resource, Token: h.Token, ValidUntil: c.validUntil(h.Start, ttl)}
		if !c.noFence {
			locks[i].Fence = h.Fence
		}
	}
	return locks
}

// mayHold records that the stores may hold l for as long as an extension
// of it for ttl, begun at start and over (unless it lands later, within a
// store timeout) elapsed after it, keeps it there: the extension's
// outcome is unknown, and UnlockAll releases the lock as long as the
// stores may hold it. A store that records its locks' owners (core.local)
// knows that itself.
func (c *core) mayHold(l Lock, start inproc.Instant, ttl, elapsed time.Duration) {
	if c.local != nil {
		return
	}
	l.ValidUntil = c.validUntil(start, ttl)
	c.held.mayHold(l, c.heldBeyond(elapsed+c.storeTimeout, ttl))
}

// errTokens marks the error of a TokenGenerator: final, not retried.
var errTokens = errors.New("token generator")

// token makes a new owner token.
func (c *core) token() (string, *Error) {
	t, err := c.tokens.Token()
	if err != nil {
		return "", &Error{Err: fmt.Errorf("%w: %w: %w", ErrUnavailable, errTokens, foreign{err})}
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

// cleanupTries bounds the releases of a cleanup.
const cleanupTries = 4

// laterTries bounds the background tries of later.
const laterTries = 3

// later runs try in the background until it reports that nothing is left
// to do: at most laterTries times, the first a store timeout from now and
// each next one after twice the wait before (350ms in all by default). It
// is for the releases that a store failure left undone: it ends on its
// own, and between tries it is a timer, not a goroutine, so a
// testing/synctest bubble may end while it waits. The calls are made
// within ctx without its cancellation: a caller that gave up still wants
// its locks released.
//
// It does nothing when the tokens are not unique (tokengen.Fixed): a late
// release could then free a later lock taken under the same token.
func (c *core) later(ctx context.Context, try func(ctx context.Context) (done bool)) {
	if c.fixedTokens {
		return
	}
	ctx = context.WithoutCancel(ctx)
	wait, tries := c.storeTimeout, 0
	var step func()
	step = func() {
		if tries++; try(ctx) || tries == laterTries {
			return
		}
		wait *= 2
		time.AfterFunc(wait, step)
	}
	time.AfterFunc(wait, step)
}

// defaultQuorum is used when Options.Quorum is nil.
var defaultQuorum Quorum = quorum.Majority{}

// observer returns the locker's hook wrapper, for Run.
func (c *core) observer() observer { return c.obs }

// shutGate is the gate that the locker's Shutdown shuts.
func (c *core) shutGate() *gate { return &c.gate }
