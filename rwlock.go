package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

// RWLocker is a read-write lock over a [Locker]: many readers or one
// writer on a resource. [RWLocker.Reader] and [RWLocker.Writer] are the
// two sides, each a Locker, so TTLs, Extend, [Run] and retry policies work
// as for locks. A waiting writer is not starved by a stream of readers.
//
// # How it works
//
// A writer first takes a plain lock, its intent, on a derived name (the
// resource and "~write"), which also keeps other writers out, and then
// waits, holding it, until no reader holds the resource. A reader takes a
// permit of a [Semaphore] on another derived name (the resource and
// "~read"), and then looks at the writer's intent: if a writer holds it,
// the reader gives its permit back and waits for the writer. New readers
// therefore stand aside as soon as a writer announces itself, and the
// writer waits only for the readers already inside.
//
// This is Dekker's order: each side first writes its own mark, then reads
// the other's. On a linearizable store (one Redis node, memory) the later
// of the two reads sees the earlier write, so a reader and a writer never
// both go in. On Redlock it holds too: the reader's permit and the
// writer's intent are each held by a majority of the stores, so some
// store x holds both; each side reads only after its own majority
// answered, x included, and IsLocked reports a name held if any store
// holds it, so the side that reads last sees the other's mark on x.
//
// A reader and a writer lock on a resource do not exclude a plain lock, or
// a Semaphore, on the same name. The derived names must not be used for
// anything else.
//
// Readers are permits: with a store that is a [Permitter] (the locker a
// [*SingleLocker] over it) up to 65536 readers hold a resource at once,
// otherwise up to 32 (further readers wait). The writer polls for the
// readers to leave at its retry delay, capped at a quarter of its TTL so
// that its intent, renewed by each poll that finds less than half of it
// left (by every poll over a Locker of another package, so that the
// poll finds that locker shut down), outlives the waits. A writer waiting
// for another writer waits for its release, on stores that can notify; a
// reader waiting for a writer tries again at its retry delay (a store may
// wake one waiter per release, and a reader would not pass it on).
//
// Shutdown of the locker it is built on shuts both sides down with it: a
// Lock waiting on either side ends with [ErrClosed] (at once, or at its
// next attempt over a Locker of another package, as for a [Semaphore]),
// new locks are refused with ErrClosed, and the locks the sides hold are
// released (they are that locker's locks, or its readers' permits),
// ending first the contexts of the Runs that hold them.
//
// Make one with [NewRWLocker]: the sides of a zero RWLocker refuse every
// call with an error matching [ErrInvalid].
type RWLocker struct {
	locker  Locker
	readers *Semaphore
	reader  *rwSide
	writer  *rwSide
}

// The most readers at once, with a Permitter and with plain locks.
const (
	maxPermitReaders = 1 << 16
	maxSlotReaders   = 32
)

// NewRWLocker returns a read-write lock over locker: many readers or one
// writer. It returns an error matching ErrInvalid for a nil locker, a
// zero locker of this package (not made by its constructor), or a locker
// that lets several holders in at once (see [Exclusive]: it would let
// several writers in).
func NewRWLocker(locker Locker) (*RWLocker, error) {
	switch {
	case locker == nil || isNilPointer(locker):
		return nil, invalidf("new", "", "nil Locker")
	case unmade(locker) != "":
		return nil, invalidf("new", "", "the Locker is a zero %T, not made by %s", locker, unmade(locker))
	}
	if err := checkExclusive("new", "", locker); err != nil {
		return nil, err
	}
	limit := maxSlotReaders
	if s, ok := locker.(*SingleLocker); ok {
		if _, ok := s.store.Store.(Permitter); ok {
			limit = maxPermitReaders
		}
	}
	readers, err := NewSemaphore(locker, limit)
	if err != nil {
		return nil, err
	}
	rw := &RWLocker{locker: locker, readers: readers}
	rw.reader, rw.writer = newRWSide(rw, false), newRWSide(rw, true)
	return rw, nil
}

// Reader returns the shared side: its locks are held by many readers at
// once, and by no reader while a writer holds the resource (flock -s).
// Its IsLocked reports whether any reader holds the resource.
//
// A lock of the other side (a writer's lock passed to the reader's
// Unlock or Extend, or a reader's to the writer's) is not held on this
// side: the call releases or extends nothing and returns an error
// matching [ErrNotHeld], over every locker. It is not [ErrInvalid],
// which reports bad input before anything is sent: when the store keeps
// the readers' permits itself ([Permitter]), a writer's token looks like
// a reader's, and only the store can tell that no reader holds it.
func (rw *RWLocker) Reader() Locker {
	if rw.reader == nil {
		return unmadeReader // refuses every call (ErrInvalid)
	}
	return rw.reader
}

// unmadeReader and unmadeWriter are the sides of a zero RWLocker: zero
// lockers, which refuse every call with ErrInvalid.
var unmadeReader, unmadeWriter = &rwSide{}, &rwSide{write: true}

// Writer returns the exclusive side: its lock is held by one writer, and
// only while no reader holds the resource (flock -x). A writer waiting for
// readers to leave keeps new readers out. Its IsLocked reports whether a
// writer holds the resource or waits for readers to leave. A reader's
// lock passed to its Unlock or Extend is not held on this side (see
// Reader): the error matches [ErrNotHeld].
func (rw *RWLocker) Writer() Locker {
	if rw.writer == nil {
		return unmadeWriter
	}
	return rw.writer
}

func readName(resource string) string  { return resource + "~read" }
func writeName(resource string) string { return resource + "~write" }

// rwSide is one side of a RWLocker: a core of its own, for Lock's retries,
// UnlockAll and Shutdown, whose engine takes the side's mark and checks
// the other side's.
type rwSide struct {
	derived
	rw       *RWLocker
	write    bool
	under    Locker // what holds this side's marks: the readers' semaphore, or the locker
	waitFor  func(ctx context.Context, op, name string) bool
	foreign  bool // the locker is of another package: its shutdown cannot be watched
	hearsAll bool // every store of the locker notifies releases (see hears)
}

// The refusals of an attempt that found the other side in.
var (
	errWriterFirst  = fmt.Errorf("%w: a writer holds it or waits for readers to leave", ErrNotAcquired)
	errReadersFirst = fmt.Errorf("%w: readers hold it", ErrNotAcquired)
)

func newRWSide(rw *RWLocker, write bool) *rwSide {
	s := &rwSide{rw: rw, write: write, under: rw.readers}
	if write {
		s.under = rw.locker
	}
	var validators []ResourceValidator
	var stores []storeRef
	s.waitFor, stores, validators = s.initDerived(s, rw.locker)
	s.foreign = stores == nil
	s.hearsAll = notifyAll(stores)
	// A writer's lock passed to the reader side is not one of the
	// readers' permits: the semaphore reports it not held (see Reader).
	s.mark = func(_ string, l Lock) (Locker, Lock, error) { return s.under, s.inner(l), nil }
	if len(validators) > 0 {
		// The names the sides use: the readers' semaphore keeps its
		// permits on readName natively, or on its slots and marker.
		names := func(r string) []string { return []string{writeName(r), readName(r)} }
		if _, native := rw.readers.impl.(*nativeSemaphore); !native {
			limit := rw.readers.limit
			names = func(r string) []string {
				return []string{writeName(r), slotName(readName(r), limit-1), markerName(readName(r))}
			}
		}
		s.validators = []ResourceValidator{derivedNames{names: names, of: validators}}
	}
	return s
}

// name is the name of this side's mark on resource.
func (s *rwSide) name(resource string) string {
	if s.write {
		return writeName(resource)
	}
	return readName(resource)
}

// inner is the mark that l, a lock of this side, stands for.
func (s *rwSide) inner(l Lock) Lock {
	l.Resource = s.name(l.Resource)
	return l
}

// attempt implements engine.
func (s *rwSide) attempt(ctx context.Context, op, resource string, ttl time.Duration) (Lock, inproc.Instant, time.Duration, *Error) {
	start := inproc.Now()
	var l Lock
	var e *Error
	if s.write {
		l, e = s.attemptWrite(ctx, resource, ttl)
	} else {
		l, e = s.attemptRead(ctx, resource, ttl)
	}
	elapsed := inproc.Since(start)
	if e != nil {
		return Lock{}, start, elapsed, e
	}
	l.Resource = resource
	s.held.put(l, s.heldBeyond(elapsed, ttl))
	return l, start, elapsed, nil
}

// attemptRead takes a reader's permit, then gives it back if a writer
// holds or waits for the resource.
func (s *rwSide) attemptRead(ctx context.Context, resource string, ttl time.Duration) (Lock, *Error) {
	p, err := s.rw.readers.TryLock(ctx, readName(resource), ttl)
	if err != nil {
		return Lock{}, asError(err)
	}
	writer, err := s.rw.locker.IsLocked(ctx, writeName(resource))
	if err == nil && !writer {
		return p, nil
	}
	s.giveBack(ctx, s.rw.readers, p)
	if err != nil {
		return Lock{}, asError(err)
	}
	return Lock{}, &Error{Err: errWriterFirst}
}

// writerCall is a writer's Lock call under way: the intent it holds
// across attempts while readers leave.
type writerCall struct {
	intent Lock
	held   bool
}

type writerCallKey struct{}

// attemptWrite takes the writer's intent (or keeps the one an earlier
// attempt of the call took), then checks that no reader is left.
func (s *rwSide) attemptWrite(ctx context.Context, resource string, ttl time.Duration) (Lock, *Error) {
	call, _ := ctx.Value(writerCallKey{}).(*writerCall)
	if call == nil {
		call = &writerCall{}
	}
	fresh := !call.held
	if fresh {
		w, err := s.rw.locker.TryLock(ctx, writeName(resource), ttl)
		if err != nil {
			return Lock{}, asError(err)
		}
		call.intent, call.held = w, true
	}
	readers, err := s.rw.readers.IsLocked(ctx, readName(resource))
	// An intent taken by an earlier attempt is renewed once less than
	// half of it is left, and at every attempt over a Locker of another
	// package: its Extend is what tells that the locker has shut down
	// (and released the intent) since, which the side cannot watch.
	renew := !fresh && (s.foreign || call.intent.Remaining() <= ttl/2)
	switch {
	case err != nil:
		return Lock{}, asError(err) // the intent stays: the next attempt looks again
	case readers && !renew:
		return Lock{}, &Error{Err: errReadersFirst}
	case fresh:
		return call.intent, nil
	}
	// The intent was taken by an earlier attempt: give it the full TTL
	// now, or, if it may not be extended, take it afresh and look again.
	w, err := s.rw.locker.Extend(ctx, call.intent, ttl)
	switch {
	case err == nil:
		call.intent = w
		if readers {
			return Lock{}, &Error{Err: errReadersFirst}
		}
		return w, nil
	case errors.Is(err, errors.ErrUnsupported) && call.intent.Remaining() > ttl/2:
		if readers {
			return Lock{}, &Error{Err: errReadersFirst}
		}
		return call.intent, nil
	case errors.Is(err, errors.ErrUnsupported) || errors.Is(err, ErrNotHeld):
		// Take it afresh at once: readers that came while no intent
		// was held would keep the writer out again.
		s.dropIntent(ctx, call)
		return s.attemptWrite(ctx, resource, ttl)
	}
	return Lock{}, asError(err)
}

// dropIntent releases the intent call holds, if any.
func (s *rwSide) dropIntent(ctx context.Context, call *writerCall) {
	if !call.held {
		return
	}
	call.held = false
	s.giveBack(ctx, s.rw.locker, call.intent)
}

// Lock implements [Locker].
func (s *rwSide) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...LockOption) (Lock, error) {
	if !s.write || ctx == nil {
		return s.core.Lock(ctx, resource, ttl, opts...)
	}
	if r, err := s.policy("lock", resource, collect(opts)); err == nil {
		opts = append(opts[:len(opts):len(opts)], WithRetry(intentRetry(r, ttl)))
	} // else the core reports it
	call := &writerCall{}
	l, err := s.core.Lock(context.WithValue(ctx, writerCallKey{}, call), resource, ttl, opts...)
	if err != nil {
		s.dropIntent(ctx, call)
	}
	return l, err
}

// intentRetry is the retry policy r of a writer's Lock with a TTL of ttl:
// its waits last at most a quarter of the TTL (and at least minDelay), so
// that the intent, renewed by each attempt that finds half of it gone,
// outlives the wait until the next attempt.
func intentRetry(r Retry, ttl time.Duration) Retry {
	limit := max(ttl/4, minDelay)
	r.Delay = min(r.Delay, limit)
	if r.MaxDelay > limit {
		r.MaxDelay = limit
	}
	return r
}

// TryLock implements [Locker].
func (s *rwSide) TryLock(ctx context.Context, resource string, ttl time.Duration) (Lock, error) {
	if !s.write || ctx == nil {
		return s.core.TryLock(ctx, resource, ttl)
	}
	call := &writerCall{}
	l, err := s.core.TryLock(context.WithValue(ctx, writerCallKey{}, call), resource, ttl)
	if err != nil {
		s.dropIntent(ctx, call)
	}
	return l, err
}

// wait implements engine: a writer refused for another writer waits for
// the intent's release; a reader refused for want of a permit waits for
// one; a writer waits for readers to leave, and a reader for a writer, by
// polling, at the retry delay. A reader does not wait in the intent's
// line: a store may wake one waiter per release (see [Waiter]), counting
// on it to take the lock and so wake the next with its release, and a
// reader woken never takes the intent, so the writers behind it in line
// would sleep until the TTL.
func (s *rwSide) wait(ctx context.Context, op, resource string, last *Error) bool {
	switch {
	case last.Err == errReadersFirst, last.Err == errWriterFirst:
		return false
	case s.write:
		return s.waitFor != nil && s.waitFor(ctx, op, writeName(resource))
	}
	return s.rw.readers.wait(ctx, op, readName(resource), last)
}

// hears implements hearer, as wait waits: not at all for readers to
// leave or for a writer, on the intent through the locker's stores that
// notify, and for a permit as the readers' semaphore does.
func (s *rwSide) hears(last *Error) hearing {
	switch {
	case last.Err == errReadersFirst, last.Err == errWriterFirst:
		return hearing{stores: s.hearsAll}
	case s.write:
		return hearing{some: true, all: s.hearsAll, stores: s.hearsAll}
	}
	if h, ok := s.rw.readers.impl.(hearer); ok {
		return h.hears(last)
	}
	return hearing{some: true, all: true, stores: true}
}

// IsLocked implements [Locker].
func (s *rwSide) IsLocked(ctx context.Context, resource string) (bool, error) {
	const op = "islocked"
	if err := s.checkQuery(ctx, op, resource); err != nil {
		return false, err
	}
	held, err := s.under.IsLocked(ctx, s.name(resource))
	return held, renamed(err, resource)
}
