// Package gocronlock makes lockkit the distributed locker and elector of
// a gocron v2 scheduler (github.com/go-co-op/gocron/v2), which runs the
// same jobs on every replica:
//
//   - [Locker] (gocron.WithDistributedLocker): each run of a job takes a
//     lock named after the job, as [lock.RunOnce] does — one replica runs
//     it, the others skip that run — kept extended while the job runs and
//     released when it returns, or kept to a minimum interval from the
//     run's start ([WithMinInterval]) so that replicas whose clocks or
//     schedules are a little apart do not run it twice.
//   - [Elector] (gocron.WithDistributedElector): the replica that leads a
//     [lock.Election] runs every job; the others skip them.
//
// Its import path ends in gocron; its name is gocronlock, so that it and
// gocron can be imported side by side. It is a module of its own, so that
// the library does not depend on gocron.
//
// gocron cannot stop a job that has started: if a job's lock (or the
// leader's term) is lost while the job runs — its renewals failed until
// its validity ran out — the job runs on without it. Keep jobs whose
// writes must not overlap behind a fence (lock.Lock.Fence, Term.Fence).
package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/lockkit/lock"
)

// ErrNotLeader is what an [Elector]'s IsLeader returns when another
// replica leads: gocron then skips the job.
var ErrNotLeader = errors.New("gocronlock: not the leader")

// Locker is a gocron.Locker over a [lock.Locker].
type Locker struct {
	locker      lock.Locker
	ttl         time.Duration
	minInterval time.Duration // WithMinInterval
}

var _ gocron.Locker = (*Locker)(nil)

// Option configures a [Locker].
type Option func(*Locker)

// WithMinInterval keeps a job's lock until d has passed since its run
// began, as [lock.MinInterval] does: a replica whose schedule fires within
// d of another's run skips its run. NewLocker refuses a d outside
// [0, lock.MaxTTL].
func WithMinInterval(d time.Duration) Option {
	return func(l *Locker) { l.minInterval = d }
}

// NewLocker returns a gocron.Locker that takes each job's lock with
// locker for ttl, extended in the background while the job runs. It
// refuses a nil locker (a nil pointer to one too), a locker that lets
// several holders in at once (see lock.Exclusive: lock.RunOnce would
// refuse it at every run), and a ttl outside (0, lock.MaxTTL] with an
// error matching lock.ErrInvalid. A ttl that
// only locker itself refuses — one that leaves no validity (or too
// little to keep extended) after its clock-drift allowance (a few
// milliseconds), or no room for its Options.LockDelay under
// lock.MaxTTL — is refused by every run instead: Lock returns the error
// matching lock.ErrInvalid, and gocron takes it as a skip.
func NewLocker(locker lock.Locker, ttl time.Duration, opts ...Option) (*Locker, error) {
	if locker == nil || isNilPointer(locker) {
		return nil, fmt.Errorf("%w: gocronlock: nil Locker", lock.ErrInvalid)
	}
	if !lock.Exclusive(locker) {
		return nil, fmt.Errorf("%w: gocronlock: the Locker lets several holders in at once (a Semaphore of more than one permit, or a read-write lock's reader side): a job's lock must have one holder at a time", lock.ErrInvalid)
	}
	if ttl <= 0 || ttl > lock.MaxTTL {
		return nil, fmt.Errorf("%w: gocronlock: ttl is %v: want a duration in (0, %v]", lock.ErrInvalid, ttl, lock.MaxTTL)
	}
	l := &Locker{locker: locker, ttl: ttl}
	for _, o := range opts {
		if o != nil {
			o(l)
		}
	}
	if l.minInterval < 0 || l.minInterval > lock.MaxTTL {
		return nil, fmt.Errorf("%w: gocronlock: minimum interval is %v: want a duration in [0, %v]", lock.ErrInvalid, l.minInterval, lock.MaxTTL)
	}
	return l, nil
}

// isNilPointer reports whether v is a nil pointer in a non-nil interface,
// which would fail every run, far from the mistake.
func isNilPointer(v any) bool {
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

// Lock implements gocron.Locker: it makes one attempt at the job's lock
// (key is the job's name). When another replica holds it, the error
// matches [lock.ErrSkipped], and gocron skips this run (and tells the
// job's AfterLockError listener). A ctx that has ended takes no lock: its
// error is returned, also when it ends during the attempt (a lock taken
// as it ended is given up as by a run that ended at once: released, or
// with WithMinInterval kept to the interval's end). Once Lock has
// returned the lock, it is kept past ctx's end, until Unlock.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: gocronlock: nil context", lock.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gocronlock: lock %q: %w", key, err)
	}
	held := &jobLock{unlock: make(chan struct{}), done: make(chan error, 1)}
	running := make(chan struct{})
	// The run outlives Lock's call (its renewals end with Unlock), but
	// ctx bounds the attempt: its end cancels the run until the lock is
	// taken.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	go func() {
		defer cancel()
		defer stop()
		held.done <- lock.RunOnce(runCtx, l.locker, key, l.ttl, func(context.Context, lock.Lock) error {
			if !stop() {
				// ctx ended as the lock was taken, and the run's context
				// with it: give the lock up as a run that ended at once.
				return fmt.Errorf("gocronlock: lock %q: %w", key, ctx.Err())
			}
			close(running)
			<-held.unlock
			return nil
		}, lock.MinInterval(l.minInterval))
	}()
	select {
	case <-running:
		return held, nil
	case err := <-held.done:
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) && errors.Is(err, context.Canceled) {
			err = fmt.Errorf("gocronlock: lock %q: %w", key, cerr) // the attempt canceled by ctx's end
		}
		return nil, err
	}
}

// jobLock is one run's lock, held by RunOnce until Unlock.
type jobLock struct {
	once   sync.Once
	unlock chan struct{}
	done   chan error
	err    error
}

// Unlock implements gocron.Lock: it releases the lock (or leaves it to
// the minimum interval's end) and returns the run's outcome: a loss of
// the lock while the job ran, or a release that failed. ctx is not used:
// the release is bounded by the lock's TTL.
func (j *jobLock) Unlock(context.Context) error {
	j.once.Do(func() {
		close(j.unlock)
		j.err = <-j.done
	})
	return j.err
}

// Elector is a gocron.Elector over a [lock.Election]: the replica that
// leads runs the jobs. It campaigns lazily — IsLeader makes one attempt
// when it does not lead — so it needs no goroutine of its own; Close
// resigns.
type Elector struct {
	election *lock.Election
	mu       sync.Mutex
	term     *lock.Term
	closed   bool
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector returns a gocron.Elector for role over locker, whose terms
// are leases of ttl renewed in the background.
func NewElector(locker lock.Locker, role string, ttl time.Duration) (*Elector, error) {
	e, err := lock.NewElection(locker, role, ttl, lock.WithRetry(lock.NoRetry))
	if err != nil {
		return nil, err
	}
	return &Elector{election: e}, nil
}

// IsLeader implements gocron.Elector: nil while this replica leads. When
// its term has ended (or it never led), it campaigns once: if another
// leads, it returns an error matching ErrNotLeader and
// [lock.ErrNotAcquired]; a store failure is returned as it is. A nil
// context is refused with an error matching lock.ErrInvalid.
func (e *Elector) IsLeader(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: gocronlock: IsLeader: nil context", lock.ErrInvalid)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("%w: the elector is closed", ErrNotLeader)
	}
	if e.term != nil {
		if e.term.Context().Err() == nil {
			return nil
		}
		_ = e.term.Resign(context.WithoutCancel(ctx)) // stops its renewals
		e.term = nil
	}
	t, err := e.election.Campaign(ctx)
	if errors.Is(err, lock.ErrNotAcquired) {
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	if err != nil {
		return err
	}
	e.term = t
	return nil
}

// Term returns the current term while this replica leads, for its fence.
func (e *Elector) Term() (*lock.Term, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil || e.term.Context().Err() != nil {
		return nil, false
	}
	return e.term, true
}

// Close resigns, if this replica leads, and makes IsLeader report
// ErrNotLeader from then on. Call it after the scheduler's Shutdown. It
// returns what [lock.Term.Resign] returns: the loss of a term that ended
// before (matching lock.ErrLost), or a failed release. A nil context is
// refused with an error matching lock.ErrInvalid, and changes nothing.
func (e *Elector) Close(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: gocronlock: Close: nil context", lock.ErrInvalid)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	if e.term == nil {
		return nil
	}
	err := e.term.Resign(ctx)
	e.term = nil
	return err
}
