package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrSkipped reports that [RunOnce] did not run its job because another
// caller holds it: it runs the job now, or ran it less than the
// [MinInterval] ago. It is an outcome to log, not a failure; the error
// also matches ErrNotAcquired.
var ErrSkipped = errors.New("lock: skipped")

// MinInterval makes [RunOnce] keep its job's lock until d has passed
// since the run began, so that no caller starts the job again within d of
// this run's start, even once the job has returned (or panicked).
// [MaxHold] does not shorten it: the hold limit bounds how long the lock
// is kept for the running job, and the lock is still kept, with nobody
// acting under it, from the job's return to the interval's end. Run and
// Lock ignore it.
func MinInterval(d time.Duration) LockOption {
	return func(o *callOptions) { o.minInterval = d }
}

// RunOnce runs fn as [Run] does if no other caller holds job, and skips
// it otherwise: the pattern "every replica tries, one runs the job, the
// others skip it" of a job that every replica schedules. It makes one
// attempt (WithRetry is ignored) and, if job is held, returns an error
// matching [ErrSkipped] (and ErrNotAcquired) at once. A failure of the
// stores is reported as such (ErrUnavailable), never as a skip: whether
// someone runs the job is then unknown. A locker that lets several
// holders in at once (a [Semaphore] of more than one permit, an
// [RWLocker]'s Reader side), which would let several callers run the job
// at once, is refused with an error matching ErrInvalid before anything
// is sent, as [NewElection] refuses it.
//
// With [MinInterval], the lock is not released when fn returns before
// the interval has passed since the run began: it is extended to the
// interval's end and left to expire, so that replicas whose schedules
// fire a little apart, or a replica that fires again early, skip the
// job until then. (An interval that cannot be kept because the extension
// fails, or is not answered within the TTL, is reported with fn's result; when the store cannot extend locks,
// the lock is left to expire at its TTL, which is not reported, and a
// lock that MaxHold left to run out before fn returned is reported by
// its [ErrMaxHold] alone.) Shutdown and UnlockAll of the locker release
// such a lock early.
// The interval runs on the store's clock, give or take the locker's drift
// allowance; on a store whose expiry is coarse (memcached's whole seconds,
// see Granular) the lock is kept up to the granularity beyond the
// interval's end, so that it lasts the interval. With Options.LockDelay,
// whose delay the stores add to a lock's TTL, the lock is extended for
// the interval less the delay, so that it is free at the interval's end;
// an interval no longer than the delay is kept for the delay beyond it.
//
// RunOnce returns fn's error joined with the cause of a loss and the
// release's or extension's error, as Run does.
func RunOnce(ctx context.Context, locker Locker, job string, ttl time.Duration, fn func(ctx context.Context, l Lock) error, opts ...LockOption) (err error) {
	const op = "runonce"
	o := collect(opts)
	switch {
	case o.minInterval < 0 || o.minInterval > MaxTTL:
		return invalidf(op, job, "MinInterval is %v: want a duration in [0, %v]", o.minInterval, MaxTTL)
	case fn == nil:
		return invalidf(op, job, "nil function")
	}
	if err := checkContext(ctx, op, job); err != nil {
		return err
	}
	if err := checkRun(op, locker, job, ttl, o, 0); err != nil {
		return err
	}
	if c, ok := locker.(argChecker); ok {
		// What TryLock would refuse, refused first: the locker's reason.
		if err := c.checkResource(op, job); err != nil {
			return err
		}
		if err := c.checkTTL(op, job, ttl); err != nil {
			return err
		}
	}
	if err := checkExclusive(op, job, locker); err != nil {
		return err
	}
	began := time.Now()
	s := startHolding(locker, job)
	defer s.abandon() // if TryLock fails, or panics; a no-op once watched
	held, err := locker.TryLock(ctx, job, ttl)
	if errors.Is(err, ErrNotAcquired) {
		return &Error{Op: op, Resource: job, Err: skipped{err}}
	}
	if err != nil {
		return err
	}
	h := hold(ctx, ctx, op, locker, held, ttl, o, 0, s)
	defer func() {
		defer h.unwatch() // once the lock is released or kept, also if that panics
		if rest := o.minInterval - time.Since(began); rest > 0 {
			l, cause := h.end()
			if !errors.Is(cause, ErrLost) {
				kept, xerr := keepFor(ctx, locker, l, rest, ttl)
				if kept || xerr != nil {
					// Kept to the interval's end, or left to expire at its
					// TTL: the interval's end at best. A lock that the hold
					// limit left to run out is not held: the cause says so.
					runOut := errors.Is(cause, ErrMaxHold) && errors.Is(xerr, ErrNotHeld)
					if xerr != nil && !errors.Is(xerr, errors.ErrUnsupported) && !runOut {
						err = errors.Join(err, fmt.Errorf("minimum interval not kept: %w", xerr))
					}
					err = runResult(err, cause, nil)
					return
				}
			}
		}
		cause, uerr := h.release(ctx)
		err = runResult(err, cause, uerr)
	}()
	return fn(h.ctx, held)
}

// keepFor extends l to rest from now, for MinInterval. It reports whether
// l is kept; an interval too short for a lock is not kept (false, nil).
// The stores keep a lock for the locker's lock delay beyond its TTL (see
// Options.LockDelay), so the TTL asked for is rest less that delay, if
// that leaves a TTL: the lock is then free at the interval's end, not a
// lock delay later. The extension is bounded as Run bounds a release, by
// the TTL: one answered later would find the lock expired.
func keepFor(ctx context.Context, locker Locker, l Lock, rest, ttl time.Duration) (bool, error) {
	xctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(rest, ttl))
	defer cancel()
	if g, ok := locker.(interface{ ttlGranularity() time.Duration }); ok {
		// A store whose expiry is coarse may end a lock up to its
		// granularity early: ask for that much more, so that the lock
		// lasts to the interval's end (and is not refused as too short
		// to leave any validity, and released at once, when less than the
		// granularity is left).
		rest += g.ttlGranularity()
	}
	if d, ok := locker.(interface{ delayBeyondTTL() time.Duration }); ok && rest > d.delayBeyondTTL() {
		if _, err := locker.Extend(xctx, l, rest-d.delayBeyondTTL()); !errors.Is(err, ErrInvalid) {
			return err == nil, ownDeadline(err, "the lock's TTL")
		}
		// Too short a TTL for the locker: keep it for rest, and the delay.
	}
	_, err := locker.Extend(xctx, l, rest)
	err = ownDeadline(err, "the lock's TTL")
	if errors.Is(err, ErrInvalid) {
		return false, nil // too short to keep: release it
	}
	return err == nil, err
}

// ttlGranularity is the largest TTL granularity among the locker's
// stores (see Granular): how much earlier than its TTL says a lock may
// expire.
func (c *core) ttlGranularity() time.Duration { return c.granularity }

// delayBeyondTTL is how long the stores keep a lock of this locker
// beyond its TTL: Options.LockDelay.
func (c *core) delayBeyondTTL() time.Duration { return c.lockDelay }

// skipped is RunOnce's cause when the job is held by another.
type skipped struct{ err error }

func (s skipped) Error() string {
	return "skipped: another caller runs the job or ran it within its minimum interval"
}

func (s skipped) Unwrap() []error { return []error{ErrSkipped, s.err} }
