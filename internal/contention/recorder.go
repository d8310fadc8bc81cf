package contention

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/lockkit/lock"
)

// Kind is the kind of a recorded operation.
type Kind uint8

// The kinds of operation.
const (
	KindAcquire   Kind = iota + 1 // Locker.Lock or TryLock
	KindExtend                    // Locker.Extend
	KindRelease                   // Locker.Unlock
	KindServerTTL                 // a read of the servers' remaining TTLs right after an acquisition
)

// String returns the kind's name: "acquire", "extend", "release", "server-ttl".
func (k Kind) String() string {
	switch k {
	case KindAcquire:
		return "acquire"
	case KindExtend:
		return "extend"
	case KindRelease:
		return "release"
	case KindServerTTL:
		return "server-ttl"
	}
	return "unknown-kind"
}

// Outcome is the result of a recorded operation, as far as the client can
// know it.
type Outcome uint8

// The outcomes. A call that timed out or failed may or may not have taken
// effect, so it is Unknown, never Refused or NotHeld.
const (
	OK      Outcome = iota + 1 // the call succeeded
	Refused                    // lock.ErrNotAcquired: held by another owner
	NotHeld                    // lock.ErrNotHeld: expired or taken over
	Unknown                    // anything else: timeouts, cancellation, store failures
)

// String returns the outcome's name: "ok", "refused", "not-held", "unknown".
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Refused:
		return "refused"
	case NotHeld:
		return "not-held"
	case Unknown:
		return "unknown"
	}
	return "invalid-outcome"
}

// Classify maps an error returned by a [lock.Locker] to an Outcome: nil is
// OK; an error matching a context error or lock.ErrUnavailable is Unknown
// (checked first: such a call may have taken effect on some store); then
// lock.ErrNotAcquired is Refused and lock.ErrNotHeld is NotHeld; every
// other error is Unknown.
func Classify(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, lock.ErrUnavailable):
		return Unknown
	case errors.Is(err, lock.ErrNotAcquired):
		return Refused
	case errors.Is(err, lock.ErrNotHeld):
		return NotHeld
	}
	return Unknown
}

// Op is one recorded operation of one client. Times are offsets from the
// recorder's start on the monotonic clock.
type Op struct {
	Client   int    // the client (worker) that made the call
	Kind     Kind   // what the call was
	Resource string // the resource
	Token    string // the lock's token: for an acquisition, set only if OK

	Start, End time.Duration // when the call began and returned
	Shared     bool          // made through a shared (reader) locker: see Recorder.SharedLocker
	Outcome    Outcome
	Err        error // the call's error, if any

	// ValidUntil is the end of the validity the library reported, for an
	// OK acquisition or extension; for KindServerTTL, the validity of the
	// lock whose servers were read.
	ValidUntil time.Duration
	// Fence is the lock's fence (0 when the store cannot fence).
	Fence uint64
	// ServerExpiry, for an OK KindServerTTL, is the latest time at which a
	// quorum of the servers can still hold the key: the end of the read
	// plus the quorum-th largest remaining TTL (see [QuorumTTL]).
	ServerExpiry time.Duration
}

// Window is a period during which a fault was in effect, from the start of
// its injection to the end of its healing (offsets from the recorder's
// start). An unhealed fault has End < 0.
type Window struct {
	Name       string
	Start, End time.Duration
}

// Recorder records the operations of every client of a run. Create it with
// [NewRecorder]; it is safe for concurrent use.
type Recorder struct {
	start time.Time

	mu      sync.Mutex
	ops     []Op
	windows []Window
}

// NewRecorder returns a recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Offset returns t as an offset from the recorder's start. Times read from
// time.Now in this process, and lock validities computed from them, carry a
// monotonic reading, which the offset then uses.
func (r *Recorder) Offset(t time.Time) time.Duration { return t.Sub(r.start) }

// Now returns the current offset from the recorder's start.
func (r *Recorder) Now() time.Duration { return time.Since(r.start) }

// Add records op.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns a copy of the recorded operations, sorted by Start.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	ops := slices.Clone(r.ops)
	r.mu.Unlock()
	slices.SortStableFunc(ops, func(a, b Op) int { return cmp.Compare(a.Start, b.Start) })
	return ops
}

// Fault records that a fault named name is being injected now, and returns
// the function to call once it has been healed. Faults that are never
// healed keep an open window (End < 0).
func (r *Recorder) Fault(name string) (healed func()) {
	start := r.Now()
	r.mu.Lock()
	i := len(r.windows)
	r.windows = append(r.windows, Window{Name: name, Start: start, End: -1})
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			end := r.Now()
			r.mu.Lock()
			r.windows[i].End = end
			r.mu.Unlock()
		})
	}
}

// Windows returns a copy of the fault windows, in the order they opened.
func (r *Recorder) Windows() []Window {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.windows)
}

// Locker returns a [lock.Locker] that passes every call to l and records
// Lock, TryLock, Extend and Unlock as operations of client. IsLocked,
// UnlockAll and Shutdown are passed through unrecorded; a lock released by
// UnlockAll or Shutdown therefore keeps its claim until its validity ends,
// which can only make the overlap checker stricter.
func (r *Recorder) Locker(client int, l lock.Locker) lock.Locker {
	return &recorded{Locker: l, r: r, client: client}
}

// SharedLocker is Locker for the shared side of a read-write lock
// (lock.RWLocker.Reader): its acquisitions make shared claims, which
// other shared claims may overlap.
func (r *Recorder) SharedLocker(client int, l lock.Locker) lock.Locker {
	return &recorded{Locker: l, r: r, client: client, shared: true}
}

type recorded struct {
	lock.Locker
	r      *Recorder
	client int
	shared bool
}

func (x *recorded) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...lock.LockOption) (lock.Lock, error) {
	start := x.r.Now()
	l, err := x.Locker.Lock(ctx, resource, ttl, opts...)
	x.r.Add(x.op(KindAcquire, resource, start, l, err))
	return l, err
}

func (x *recorded) TryLock(ctx context.Context, resource string, ttl time.Duration) (lock.Lock, error) {
	start := x.r.Now()
	l, err := x.Locker.TryLock(ctx, resource, ttl)
	x.r.Add(x.op(KindAcquire, resource, start, l, err))
	return l, err
}

func (x *recorded) Extend(ctx context.Context, held lock.Lock, ttl time.Duration) (lock.Lock, error) {
	start := x.r.Now()
	l, err := x.Locker.Extend(ctx, held, ttl)
	op := x.op(KindExtend, held.Resource, start, l, err)
	op.Token, op.Fence = held.Token, held.Fence
	x.r.Add(op)
	return l, err
}

func (x *recorded) Unlock(ctx context.Context, held lock.Lock) error {
	start := x.r.Now()
	err := x.Locker.Unlock(ctx, held)
	op := x.op(KindRelease, held.Resource, start, lock.Lock{}, err)
	op.Token, op.Fence = held.Token, held.Fence
	x.r.Add(op)
	return err
}

// op builds the record of a call that began at start and returned l, err.
func (x *recorded) op(k Kind, resource string, start time.Duration, l lock.Lock, err error) Op {
	op := Op{Client: x.client, Kind: k, Resource: resource, Start: start, End: x.r.Now(), Shared: x.shared, Outcome: Classify(err), Err: err}
	if err == nil && !l.ValidUntil.IsZero() {
		op.Token, op.Fence, op.ValidUntil = l.Token, l.Fence, x.r.Offset(l.ValidUntil)
	}
	return op
}
