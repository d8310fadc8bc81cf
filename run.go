package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Run acquires resource with locker.Lock (retrying as opts say), runs fn
// while keeping the lock extended in the background, and releases it when
// fn returns — also when fn panics, in which case the panic continues
// after the release.
//
// Each extension sets the TTL to ttl from the moment it is made, every
// ttl/3 unless [ExtendEvery] says otherwise. fn's context is canceled:
//   - with cause [ErrLost] when an extension reports the lock not held, or
//     extensions keep failing until the lock's validity runs out (if the
//     store cannot extend locks, when the first validity runs out);
//   - with cause [ErrMaxHold] once the time set with [MaxHold] has passed
//     since acquisition (the lock is no longer extended from then on);
//   - when ctx is canceled.
//
// fn receives the lock as acquired: its Token and Fence stay the same for
// the whole run, its ValidUntil is that of the first acquisition. fn should
// watch its context and check it before each protected write.
//
// Run returns the error of Lock if the lock could not be acquired, and
// otherwise fn's error joined with the loss cause (if the lock was lost
// while fn ran) and with Unlock's error (if the release failed).
func Run(ctx context.Context, locker Locker, resource string, ttl time.Duration, fn func(ctx context.Context, l Lock) error, opts ...Option) (err error) {
	const op = "run"
	o := collect(opts)
	switch {
	case ctx == nil:
		return invalidf(op, resource, "nil context")
	case locker == nil:
		return invalidf(op, resource, "nil Locker")
	case fn == nil:
		return invalidf(op, resource, "nil function")
	case o.maxHold < 0:
		return invalidf(op, resource, "MaxHold is %v: want >= 0", o.maxHold)
	case o.extendEvery < 0 || (o.extendEvery > 0 && o.extendEvery < minDelay):
		return invalidf(op, resource, "ExtendEvery is %v: want at least %v", o.extendEvery, minDelay)
	case ttl > 0 && o.extendEvery >= ttl:
		return invalidf(op, resource, "ExtendEvery is %v: want less than the ttl (%v)", o.extendEvery, ttl)
	}
	held, err := locker.Lock(ctx, resource, ttl, opts...)
	if err != nil {
		return err
	}
	acquired := time.Now()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var maxHoldAt time.Time
	if o.maxHold > 0 {
		maxHoldAt = acquired.Add(o.maxHold)
		var cancelHold context.CancelFunc
		runCtx, cancelHold = context.WithDeadlineCause(runCtx, maxHoldAt,
			fmt.Errorf("%w: %q held for %v", ErrMaxHold, resource, o.maxHold))
		defer cancelHold()
	}
	every := o.extendEvery
	if every == 0 {
		every = ttl / 3
	}

	k := &keeper{locker: locker, cur: held, ttl: ttl, every: every, maxHoldAt: maxHoldAt, lost: cancel, stop: make(chan struct{})}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		k.run(ctx)
	}()

	defer func() {
		close(k.stop)
		<-exited // no extension may outlive the release
		uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
		uerr := locker.Unlock(uctx, k.cur)
		ucancel()
		err = runResult(err, context.Cause(runCtx), uerr)
	}()
	return fn(runCtx, held)
}

// runResult combines fn's error with the cause of a loss or of the hold
// limit and with the release's error.
func runResult(fnErr, cause, unlockErr error) error {
	errs := []error{fnErr}
	ours := errors.Is(cause, ErrLost) || errors.Is(cause, ErrMaxHold)
	if ours && !errors.Is(fnErr, cause) {
		errs = append(errs, cause)
	}
	if unlockErr != nil && !(errors.Is(cause, ErrLost) && errors.Is(unlockErr, ErrNotHeld)) {
		errs = append(errs, unlockErr)
	}
	return errors.Join(errs...)
}

// keeper extends a lock in the background for Run.
type keeper struct {
	locker    Locker
	cur       Lock // read by Run only after the keeper exited
	ttl       time.Duration
	every     time.Duration
	maxHoldAt time.Time
	lost      context.CancelCauseFunc
	stop      chan struct{}
}

func (k *keeper) run(ctx context.Context) {
	t := time.NewTimer(k.every)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		if !k.maxHoldAt.IsZero() && !time.Now().Before(k.maxHoldAt) {
			return // the hold limit canceled fn's context; let the lock run out
		}
		ectx, ecancel := context.WithDeadline(ctx, k.cur.ValidUntil)
		next, err := k.locker.Extend(ectx, k.cur, k.ttl)
		ecancel()
		switch {
		case err == nil:
			k.cur = next
			t.Reset(k.every)
			continue
		case ctx.Err() != nil:
			return // fn's context is canceled with ctx
		case errors.Is(err, errors.ErrUnsupported):
			k.expireAt(ctx, k.cur.ValidUntil, err)
			return
		case errors.Is(err, ErrNotHeld) || errors.Is(err, ErrClosed) || !k.cur.Valid():
			k.lose(ctx, fmt.Errorf("%w: %q: %w", ErrLost, k.cur.Resource, err))
			return
		}
		// A store failed but the lock is still valid: try again soon.
		t.Reset(max(min(k.every/4, k.cur.Remaining()/2), time.Millisecond))
	}
}

// expireAt reports the lock lost when its validity runs out, unless Run
// stops first: for stores that cannot extend.
func (k *keeper) expireAt(ctx context.Context, end time.Time, why error) {
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	select {
	case <-k.stop:
	case <-t.C:
		k.lose(ctx, fmt.Errorf("%w: %q expired: %w", ErrLost, k.cur.Resource, why))
	}
}

// lose cancels fn's context with cause and tells the locker's hook.
func (k *keeper) lose(ctx context.Context, cause error) {
	k.lost(cause)
	if o, ok := k.locker.(interface{ observer() observer }); ok {
		o.observer().emit(ctx, Event{Kind: EventLost, Op: "run", Resource: k.cur.Resource, Lock: k.cur, Err: cause})
	}
}
