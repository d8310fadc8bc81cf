package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/lockkit/lock"
)

// takeFlags are the flags of the commands that take a lock (run,
// acquire): how long to wait for it, and what to do when another owner
// holds it.
type takeFlags struct {
	wait         waitValue
	conflictCode int
	quiet        bool
}

func addTakeFlags(fs *flag.FlagSet) *takeFlags {
	tf := &takeFlags{}
	fs.Var(&tf.wait, "wait", "how long to wait for a held lock: 0 fails at once; a `DURATION` such as 5m; or forever")
	fs.IntVar(&tf.conflictCode, "conflict-exit-code", exitConflict, "exit status when the lock is held by another owner")
	fs.BoolVar(&tf.quiet, "quiet", false, "say nothing on stderr when the lock is held by another owner")
	return tf
}

// check checks the flags, and the TTL of the lock to take.
func (tf *takeFlags) check(ttl time.Duration) error {
	if err := positiveDuration("ttl", ttl); err != nil {
		return err
	}
	if tf.conflictCode < 0 || tf.conflictCode > 255 {
		return usagef("--conflict-exit-code %d: want 0 to 255", tf.conflictCode)
	}
	return nil
}

// acquireError turns the error of an acquisition into lockctl's answer;
// mode, if not nil, says what was taken on resource.
func acquireError(acqCtx context.Context, err error, resource string, mode *modeFlags, tf *takeFlags, hook *waitHook) error {
	var sig signalCause
	switch {
	case err == nil:
		return fmt.Errorf("%q: the lock was not acquired, for no reason given", resource) // cannot happen
	case errors.As(context.Cause(acqCtx), &sig):
		return exitWith(exitSignal+signalNumber(sig.sig), fmt.Errorf("interrupted by %s while waiting for %q", signalName(sig.sig), resource))
	case errors.Is(err, lock.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded) && (hook.contended() || heldByAnother(err)):
		msg := mode.conflict(resource)
		if tf.wait.d > 0 {
			msg += fmt.Sprintf(" (waited %v)", tf.wait.d)
		}
		if tf.quiet {
			return exitWith(tf.conflictCode, nil)
		}
		return exitWith(tf.conflictCode, errors.New(msg))
	case errors.Is(err, lock.ErrInvalid):
		return &usageError{err: err}
	}
	return err
}

// heldByAnother reports whether a store answered an attempt that did not
// complete (--wait ran out while other stores were slow) with the lock
// held by another owner.
func heldByAnother(err error) bool {
	var le *lock.Error
	if !errors.As(err, &le) {
		return false
	}
	for _, s := range le.Stores {
		if errors.Is(s.Err, lock.ErrNotAcquired) {
			return true
		}
	}
	return false
}

// acquirer is the locker that run and acquire take locks with: it fails
// at once or waits as --wait says, and stops waiting when its context,
// canceled by a signal, ends. Extend and Unlock go to the locker
// unchanged.
type acquirer struct {
	lock.Locker
	ctx  context.Context // canceled by a signal before the lock is taken
	wait waitValue
	hook *waitHook // told of a first attempt refused, if not nil
}

// Lock takes the lock as --wait says. A --wait DURATION bounds the
// waiting, not the first attempt's answer: that attempt is a TryLock,
// bounded by the store timeout as with --wait 0, and only once it was
// refused does Lock wait, within DURATION. A --wait shorter than a store
// round trip would otherwise end the first attempt before any store told
// that another owner holds the lock.
func (w *acquirer) Lock(_ context.Context, resource string, ttl time.Duration, _ ...lock.LockOption) (lock.Lock, error) {
	if w.wait.forever {
		return w.Locker.Lock(w.ctx, resource, ttl)
	}
	l, err := w.TryLock(w.ctx, resource, ttl)
	if w.wait.d == 0 || !errors.Is(err, lock.ErrNotAcquired) {
		return l, err
	}
	if w.hook != nil {
		w.hook.met(true)
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.wait.d)
	defer cancel()
	return w.Locker.Lock(ctx, resource, ttl)
}

// waitHook remembers whether the last failed attempt met contention, so
// that a --wait that runs out is reported as contention rather than as a
// timeout, and announces the first wait.
type waitHook struct {
	mu       sync.Mutex
	held     bool
	announce sync.Once
	onWait   func()
}

// Observe records whether the attempt that a retry follows met
// contention.
func (h *waitHook) Observe(_ context.Context, e lock.Event) {
	if e.Kind != lock.EventRetry {
		return
	}
	h.met(errors.Is(e.Err, lock.ErrNotAcquired))
}

// met records whether the last failed attempt met contention, and
// announces the first wait for a held lock.
func (h *waitHook) met(held bool) {
	h.mu.Lock()
	h.held = held
	h.mu.Unlock()
	if held && h.onWait != nil {
		h.announce.Do(h.onWait)
	}
}

func (h *waitHook) contended() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// signalCause is the cause of an acquisition interrupted by a signal.
type signalCause struct{ sig os.Signal }

func (s signalCause) Error() string { return "interrupted by " + signalName(s.sig) }

// interruptible returns a context that the first of the signals run
// forwards cancels, with a signalCause, and the function that stops
// listening for them.
func interruptible(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, forwardedSignals...)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case sig := <-sigs:
			cancel(signalCause{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		<-exited
		cancel(nil)
	}
}
