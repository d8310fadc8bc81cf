package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockkit/lock/internal/ctxend"
	"github.com/lockkit/lock/internal/inproc"
)

// Retry says how Lock retries while a resource is held by another owner or
// while stores fail. Validation errors and a closed locker are never
// retried. Between attempts Lock waits for the resource to be released
// when the store can notify it ([Waiter]), for at most the lock's TTL (or
// the delay, if longer), and otherwise sleeps the delay. A SingleLocker
// over a store that keeps a line ([Queuer]) waits in it instead, and
// under a policy that retries Forever stays there, keeping its place
// however many TTLs it waits, until the lock is handed to it, the context
// ends, Shutdown ends the wait or the store fails (its subscription or
// watch ends), and for a day at most: it then gets in line again, at the
// end. A MultiLocker
// waits on the refusing stores that can notify; if some refusing store
// cannot, for at most the delay. So does a [Semaphore] of plain locks of
// more than 16 permits, which watches 16 of its slots.
type Retry struct {
	// Attempts is the number of attempts in all, the first included:
	// Retry{Attempts: 3} makes three. 0 and 1 make one attempt only;
	// [Forever] retries until the context is done.
	Attempts int

	// Delay is the wait before the first retry: at least 1ms when there
	// are retries. Every wait is drawn at random from [d/2, d], so that
	// waiters do not hit the stores in waves. Where the store notifies
	// releases, a wait lasts until the release instead, for up to the
	// lock's TTL (a day in a store's line under a policy that retries
	// Forever: see Retry).
	Delay time.Duration

	// MaxDelay, when greater than Delay, makes the waits double after each
	// attempt up to MaxDelay (exponential backoff). Zero keeps them at Delay;
	// any other value below Delay is refused (ErrInvalid).
	MaxDelay time.Duration

	poll bool // DefaultRetry, or a policy a locker made of it: see marked
}

// Forever, as Retry.Attempts, retries until the context is done.
const Forever = -1

// minDelay is the shortest Retry.Delay, and the shortest interval of
// Run's extensions: anything shorter makes a loop spin.
const minDelay = time.Millisecond

// DefaultRetry is the retry policy of Lock unless the locker's Options or
// the call say otherwise: retry until the context is done, backing off from
// 10ms to 500ms, woken early by a release where the store supports it
// ([Waiter]).
//
// Where a store that refused the lock cannot notify releases (memcached,
// alone or among a MultiLocker's stores), this policy — a locker's by
// default, or given in Options.Retry or WithRetry — polls every 5–10ms
// for the first quarter of a second of a wait, and backs off only after
// that, doubling the delay every quarter of a second up to 500ms:
// waiters that back off at once lose the lock, again and again, to those
// that poll faster, so their waits grow long and some are never served,
// while waiters that never back off load the store.
var DefaultRetry = Retry{Attempts: Forever, Delay: 10 * time.Millisecond, MaxDelay: 500 * time.Millisecond}

// NoRetry makes Lock behave as TryLock.
var NoRetry = Retry{}

func (r Retry) validate() error {
	switch {
	case r.Attempts < Forever:
		return fmt.Errorf("Retry.Attempts is %d: want >= 0, or Forever", r.Attempts)
	case r.Delay < 0:
		return fmt.Errorf("Retry.Delay is %v: want >= 0", r.Delay)
	case r.retries() && r.Delay == 0:
		return errors.New("Retry.Delay is 0 with retries: want a positive delay")
	case r.retries() && r.Delay < minDelay:
		return fmt.Errorf("Retry.Delay is %v: want at least %v, or the retries spin", r.Delay, minDelay)
	case r.MaxDelay < 0:
		return fmt.Errorf("Retry.MaxDelay is %v: want >= 0", r.MaxDelay)
	case r.MaxDelay != 0 && r.MaxDelay < r.Delay:
		return fmt.Errorf("Retry.MaxDelay (%v) is less than Retry.Delay (%v)", r.MaxDelay, r.Delay)
	}
	return nil
}

// pollGrace is how long a Lock on a store that cannot notify releases
// polls every Delay (with the default policy) before it backs off.
const pollGrace = 250 * time.Millisecond

// pollDelay is the jittered wait of the default policy on a store that
// cannot notify releases, after waiting for waited: Delay for pollGrace,
// then doubling every pollGrace up to MaxDelay.
func pollDelay(r Retry, waited time.Duration) time.Duration {
	d := r.Delay
	for w := waited - pollGrace; w > 0 && d < r.MaxDelay; w -= pollGrace {
		d = doubled(d, r.MaxDelay)
	}
	return jittered(d)
}

// doubled returns twice d, at most limit (d < limit), without overflowing
// however long the durations.
func doubled(d, limit time.Duration) time.Duration {
	if d > limit/2 {
		return limit
	}
	return 2 * d
}

// jittered returns a wait drawn at random from [d/2, d].
func jittered(d time.Duration) time.Duration {
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// marked returns r marked as the default policy if it is DefaultRetry,
// whether a locker took it by default or it was given: the default polls
// at first where a store cannot notify. A policy a locker makes of it (a
// writer's, whose delays a quarter of the TTL bounds) keeps the mark.
func marked(r Retry) Retry {
	plain := r
	plain.poll = false
	r.poll = r.poll || plain == DefaultRetry
	return r
}

// retries reports whether r makes more than one attempt.
func (r Retry) retries() bool { return r.Attempts == Forever || r.Attempts > 1 }

// last reports whether the attempt numbered n (from 0) is the last r
// allows.
func (r Retry) last(n int) bool { return r.Attempts != Forever && n+1 >= r.Attempts }

// delay returns the jittered wait after the attempt numbered n (from 0).
func (r Retry) delay(n int) time.Duration {
	d := r.Delay
	for i := 0; i < n && d < r.MaxDelay; i++ {
		d = doubled(d, r.MaxDelay)
	}
	return jittered(d)
}

// retryLoop runs the engine's attempts as retry allows, pausing between
// attempts, and tells the hook about it. The returned error has Op and
// Resource set.
func (c *core) retryLoop(ctx context.Context, op, resource string, ttl time.Duration, retry Retry) (l Lock, e *Error) {
	ctx = c.obs.begin(ctx, op, resource)
	var first, start inproc.Instant // the starts of the first and of the last attempt
	var took time.Duration          // what the last attempt took
	n, wakes, woke := 0, 0, 0
	// Where the store keeps a line (Queuer), the attempts are queued ones,
	// each waiting in line up to queue; one that gets in line is told to
	// the hook as an attempt that found the resource held, a wait, and
	// the next attempt.
	var queue time.Duration
	if retry.retries() && c.queues() {
		queue = inLine(retry, max(retry.delay(0), ttl))
	}
	for ; ; n++ {
		if n > 0 && c.gate.isShut() {
			e = &Error{Err: ErrClosed}
			n-- // attempt n+1 is not made: the events count n
			break
		}
		if c.obs.on() {
			c.obs.emit(ctx, Event{Kind: EventAttempt, Op: op, Resource: resource, Attempt: n + 1})
		}
		if queue > 0 && c.queues() {
			var inLine bool
			l, start, took, inLine, e = c.queuer.queued(ctx, op, resource, ttl, queue, n+1)
			if inLine {
				n++ // the attempt that got in line, then the one granted
			}
		} else {
			l, start, took, e = c.eng.attempt(ctx, op, resource, ttl)
		}
		queue = 0
		if first.IsZero() {
			// The first attempt (n is 1 already if it got in line).
			if first = start; first.IsZero() {
				first = inproc.Now() // the attempt failed before it began
			}
		}
		if e == nil {
			break
		}
		if ended(ctx) {
			e = canceled(ctx, e)
			break
		}
		if errors.Is(e.Err, ErrInvalid) || errors.Is(e.Err, ErrClosed) || errors.Is(e.Err, errTokens) || retry.last(n) {
			break
		}
		// The delay backs off with the attempts that did not follow a
		// wake: a waiter woken in its turn has lost no ground. The default
		// policy polls at first where a refusing store cannot notify (see
		// DefaultRetry); not over a Locker of another package, whose
		// stores may notify.
		canWait, hears := c.waits(), c.hearing(e)
		d := retry.delay(n - woke)
		if retry.poll && !c.guessed && (!canWait || !hears.stores) {
			d = pollDelay(retry, inproc.Since(first))
		}
		// A wake is followed by an attempt at once, but not more than
		// maxWakes times in a row: a store whose wait returns while the
		// resource is still held must not make Lock spin.
		waiting := canWait && hears.some && errors.Is(e.Err, ErrNotAcquired) && wakes < maxWakes
		// An attempt that waits in the store's line counts as two (see
		// queuer), so the last attempt allowed does not: before it, Lock
		// waits for a release as without a line, if a store can notify,
		// and sleeps otherwise.
		queues := c.queues()
		queueNext := waiting && queues && !retry.last(n+1)
		if waiting && queues && !queueNext && !c.notifies {
			waiting = false
		}
		// In line for a release, wait as long as the lock may be held (a
		// store wakes its waiters on expiry too), not the delay: a waiter
		// that leaves the line at the delay to try again loses its place,
		// and takes the lock from the waiter whose turn it is when it
		// finds the lock being handed over. A wait that fails (the
		// store's subscription broke) sleeps out the delay.
		// A wait that cannot hear every release (a Redlock whose refusing
		// stores notify only in part, a semaphore watching some of its
		// slots) would miss the others: it lasts the delay, as a poll
		// would.
		bound := d
		if waiting && hears.all {
			bound = max(d, ttl)
		}
		if queueNext {
			bound = inLine(retry, bound)
		}
		if c.obs.on() {
			c.obs.emit(ctx, Event{Kind: EventRetry, Op: op, Resource: resource, Attempt: n + 1, Delay: bound, Waiting: waiting, Err: e.Err})
		}
		if queueNext {
			// The next attempt waits in the store's line itself. One that
			// ends without the lock counts as a wake: a store that kept
			// answering at once must not make Lock spin.
			queue = bound
			wakes++
			woke++
			continue
		}
		alive, woken := c.pause(ctx, op, resource, d, bound, e, waiting)
		if !alive {
			e = canceled(ctx, e)
			break
		}
		if woken {
			wakes++
			woke++
		} else {
			wakes = 0
		}
		if c.gate.isShut() {
			e = &Error{Err: ErrClosed}
			break
		}
	}
	if e == nil {
		e = c.closedMeanwhile(ctx, op, resource, l)
	}
	if e != nil {
		e.Op, e.Resource = op, resource
		if c.obs.on() {
			c.obs.emit(ctx, Event{Kind: EventNotAcquired, Op: op, Resource: resource, Attempt: n + 1, Duration: inproc.Since(first), Err: e})
		}
		return Lock{}, e
	}
	if c.obs.on() {
		c.obs.emit(ctx, Event{Kind: EventAcquired, Op: op, Resource: resource, Lock: l, Attempt: n + 1, Duration: start.Sub(first) + took})
	}
	return l, nil
}

// inLine returns how long a queued attempt of retry waits in the store's
// line: as long as a wait for a release would (bound), unless retry
// retries Forever, whose attempt stays in line until the lock is handed to
// it or the context ends (up to waitInLine). Leaving the line at the bound
// would cost the caller its place: it would get in again at the end, behind
// everyone who asked meanwhile, once per bound for as long as the line
// holds more than a TTL's worth of holds — and some waiters would never
// reach its head. A policy of a few attempts keeps its bound, so that the
// attempts it allows end.
func inLine(retry Retry, bound time.Duration) time.Duration {
	if retry.Attempts == Forever {
		return max(bound, waitInLine)
	}
	return bound
}

// waitInLine is the longest wait in a store's line of a Lock that retries
// Forever: a day, long enough that no line is that long, short enough that
// every store can set a timer for it.
const waitInLine = 24 * time.Hour

// maxWakes bounds the attempts made at once after a wake, in a row. A
// waiter woken in its turn may find the lock taken again by a caller that
// did not wait (a releaser locking again at once, a newcomer), a few
// times in a row, and gets back in line at the front each time (on
// Redis); sleeping out a delay instead would cost it its place, so the
// bound is only there to stop a wait that returns while the resource is
// held from making Lock spin.
const maxWakes = 10

// pause waits d, or, if waiting (the last attempt met contention and the
// stores can notify releases), until a release within bound or, should
// the wait fail, until d has passed; or until Shutdown (of the locker, or
// of the locker whose locks it takes: see gate.follow). It reports whether
// ctx is still alive, and whether a release woke it.
func (c *core) pause(ctx context.Context, op, resource string, d, bound time.Duration, last *Error, waiting bool) (alive, woken bool) {
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	defer c.gate.afterShut(cancel)() // Shutdown ends the wait
	if waiting {
		wctx, wcancel := context.WithTimeout(ctx, bound)
		defer wcancel()
		defer c.gate.afterShut(wcancel)()
		if c.eng.wait(wctx, op, resource, last) {
			return ctx.Err() == nil, true // woken by a release: try again at once
		}
	}
	<-sctx.Done()
	return ctx.Err() == nil, false
}

// canceled turns the last attempt's error into the error of a call whose
// context ended: it matches the context's error, not the last outcome.
func canceled(ctx context.Context, last *Error) *Error {
	err, sentinel := ctxErr(ctx), ctx.Err()
	if sentinel == nil {
		sentinel = context.DeadlineExceeded // its deadline passed: see ended
	}
	if last != nil && last.Err != nil && !errors.Is(last.Err, sentinel) {
		err = fmt.Errorf("%w (last attempt: %s)", err, trimPrefix(last.Err))
	}
	e := &Error{Err: err}
	if last != nil {
		e.Stores = last.Stores
	}
	return e
}

// ended reports whether ctx has ended, counting a deadline that has
// passed (see internal/ctxend).
func ended(ctx context.Context) bool { return ctxend.Err(ctx) != nil }

// ctxErr returns the error of ctx, which has ended (see ended), with its
// cause when the cause says more; the cause matches neither an outcome
// nor another context error (see foreign).
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return ctxend.Err(ctx) // its deadline passed: ctx says so a moment later
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, foreign{cause})
	}
	return err
}
