package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

// slotSemaphore is a semaphore made of plain locks: permit i of resource
// is a lock on slotName(resource, i), taken with the locker's TryLock, and
// the limit is kept in a marker lock (see NewSemaphore). It is a core of
// its own, for Lock's retries, UnlockAll and Shutdown, whose engine tries
// every slot once per attempt.
type slotSemaphore struct {
	derived
	locker  Locker
	limit   int
	stores  []storeRef // the locker's stores, for the limit marker: nil if not one of ours
	quorum  Quorum     // a MultiLocker's, of stores that must confirm the marker (nil: every store)
	waitFor func(ctx context.Context, op, name string) bool
}

// maxWaitSlots bounds the slots a waiting Lock watches for a release.
const maxWaitSlots = 16

func newSlotSemaphore(locker Locker, limit int) *slotSemaphore {
	s := &slotSemaphore{locker: locker, limit: limit}
	var validators []ResourceValidator
	s.waitFor, s.stores, validators = s.initDerived(s, locker)
	if m, ok := locker.(*MultiLocker); ok {
		s.quorum = m.quorum
	}
	s.mark = func(op string, l Lock) (Locker, Lock, error) {
		inner, err := s.slotLock(op, l)
		return locker, inner, err
	}
	s.extended = func(ctx context.Context, l Lock, ttl time.Duration) {
		_ = s.markLimit(ctx, "extend", l.Resource, ttl) // refresh; the permit is held either way
	}
	if len(validators) > 0 {
		s.validators = []ResourceValidator{derivedNames{
			names: func(r string) []string { return []string{slotName(r, limit-1), markerName(r)} },
			of:    validators,
		}}
	}
	return s
}

// attempt implements engine: it tries every slot once, from a random one.
func (s *slotSemaphore) attempt(ctx context.Context, op, resource string, ttl time.Duration) (Lock, inproc.Instant, time.Duration, *Error) {
	start := inproc.Now()
	first := rand.IntN(s.limit)
	for i := range s.limit {
		slot := (first + i) % s.limit
		l, err := s.locker.TryLock(ctx, slotName(resource, slot), ttl)
		if errors.Is(err, ErrNotAcquired) && !errors.Is(err, ErrUnavailable) && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return Lock{}, start, inproc.Since(start), asError(err)
		}
		if e := s.markLimit(ctx, op, resource, ttl); e != nil {
			s.giveBack(ctx, s.locker, l)
			return Lock{}, start, inproc.Since(start), e
		}
		elapsed := inproc.Since(start)
		p := Lock{Resource: resource, Token: permitToken(slot, s.limit, l.Token), ValidUntil: l.ValidUntil, Fence: l.Fence}
		s.held.put(p, s.heldBeyond(elapsed, ttl))
		return p, start, elapsed, nil
	}
	// Every slot is held: by callers of another limit, if they hold the
	// marker.
	if err := s.checkLimit(ctx, op, resource, ttl); err != nil {
		return Lock{}, start, inproc.Since(start), &Error{Err: asLimitError(err)}
	}
	return Lock{}, start, inproc.Since(start), &Error{Err: ErrNotAcquired}
}

// markLimit takes or refreshes resource's limit marker on every store of
// the locker, for the call op. It returns an error matching
// ErrLimitMismatch if a store holds the marker of another limit, and one
// matching ErrUnavailable (or ctx's error) if too few stores — the one
// store, or fewer than a quorum of a MultiLocker's — confirmed the marker:
// a store that failed may hold another limit's, and the permit would be
// one too many. Either way it releases the markers it took: left there,
// they would make the callers of the limit in force be refused in turn
// until they expired. The refresh that follows an extension ignores its
// error: the permit is held either way.
func (s *slotSemaphore) markLimit(ctx context.Context, op, resource string, ttl time.Duration) *Error {
	errs, took, mismatched := s.onMarker(ctx, op, resource, ttl, markOn)
	confirmed := 0
	for _, err := range errs {
		if err == nil {
			confirmed++
		}
	}
	n := len(errs)
	if mismatched == nil && (confirmed == n || s.quorum != nil && s.quorum.Met(confirmed, n)) {
		return nil
	}
	s.dropMarkers(ctx, op, resource, took)
	switch {
	case mismatched != nil:
		return &Error{Err: asLimitError(mismatched)}
	case ctx.Err() != nil:
		return &Error{Err: ctxErr(ctx)}
	}
	e := &Error{Err: fmt.Errorf("%w: the semaphore's limit marker could not be checked", ErrUnavailable)}
	for i, err := range errs {
		if err != nil {
			e.Stores = append(e.Stores, StoreError{Index: i, Store: s.stores[i].name, Err: err})
		}
	}
	return e
}

// checkLimit is markLimit for an attempt that found every slot held: it
// refreshes the marker of its own limit, takes no free one, and returns an
// error matching ErrLimitMismatch if a store holds the marker of another.
func (s *slotSemaphore) checkLimit(ctx context.Context, op, resource string, ttl time.Duration) error {
	_, _, mismatched := s.onMarker(ctx, op, resource, ttl, checkOn)
	return mismatched
}

// onMarker calls on for resource's marker on every store of the locker,
// at once, and returns each store's error, whether on took the marker
// there, and the first limit mismatch among the errors.
func (s *slotSemaphore) onMarker(ctx context.Context, op, resource string, ttl time.Duration, on func(ctx context.Context, m marker, limit int, ttl time.Duration) (took bool, err error)) (errs []error, took []bool, mismatched error) {
	ttl = s.storeTTL(ttl) // the marker lives as long as the permit's slot
	errs, took = make([]error, len(s.stores)), make([]bool, len(s.stores))
	if len(s.stores) == 1 {
		took[0], errs[0] = on(ctx, s.marker(op, resource, 0), s.limit, ttl)
	} else {
		sctx, cancel := context.WithTimeout(ctx, s.storeTimeout)
		defer cancel()
		var wg sync.WaitGroup
		for i := range s.stores {
			wg.Go(func() { took[i], errs[i] = on(sctx, s.marker(op, resource, i), s.limit, ttl) })
		}
		wg.Wait()
	}
	if i := slices.IndexFunc(errs, func(err error) bool { return mismatch(err) != nil }); i >= 0 {
		mismatched = errs[i]
	}
	return errs, took, mismatched
}

// dropMarkers releases resource's limit marker on the stores where took
// says markLimit took it.
func (s *slotSemaphore) dropMarkers(ctx context.Context, op, resource string, took []bool) {
	if !slices.Contains(took, true) {
		return
	}
	cctx, cleanupDone := s.cleanupContext(ctx)
	defer cleanupDone()
	var wg sync.WaitGroup
	for i := range s.stores {
		if took[i] {
			wg.Go(func() { _ = s.marker(op, resource, i).release(cctx) })
		}
	}
	wg.Wait()
}

// mismatch returns err if it reports a limit mismatch, else nil.
func mismatch(err error) error {
	if errors.Is(err, ErrLimitMismatch) {
		return err
	}
	return nil
}

// marker is a semaphore's limit marker on one store of its locker, for
// one call of the semaphore. Its store calls are told to the locker's
// hook, under the marker's name, as the slots' are.
type marker struct {
	s           *slotSemaphore
	st          *storeRef
	op          string // the semaphore's call
	name, token string
}

// marker returns resource's limit marker on store i, for the call op.
func (s *slotSemaphore) marker(op, resource string, i int) marker {
	return marker{s: s, st: &s.stores[i], op: op, name: markerName(resource), token: markerToken(s.limit)}
}

func (m marker) canExtend() bool { return m.st.ext != nil }

func (m marker) extend(ctx context.Context, ttl time.Duration) error {
	return m.told(ctx, "extend", func() error { return m.st.ext.Extend(ctx, m.name, m.token, ttl) })
}

func (m marker) acquire(ctx context.Context, ttl time.Duration) error {
	return m.told(ctx, "acquire", func() error { return m.st.Acquire(ctx, m.name, m.token, ttl) })
}

func (m marker) release(ctx context.Context) error {
	return m.told(ctx, "release", func() error { return m.st.Release(ctx, m.name, m.token) })
}

func (m marker) exists(ctx context.Context) (held bool, err error) {
	err = m.told(ctx, "exists", func() (err error) { held, err = m.st.Exists(ctx, m.name); return err })
	return held, err
}

// told makes the store call call, and tells the hook of it.
func (m marker) told(ctx context.Context, storeOp string, call func() error) error {
	t0 := m.s.obs.start()
	err := call()
	m.s.obs.storeCall(ctx, m.op, m.name, m.st, storeOp, t0, err)
	return err
}

// markOn takes or extends marker m under its token, and reports whether
// it took it (an Acquire granted it). An Extend succeeds only under the
// token the marker was taken with, that is, the same limit; one that
// finds the marker not held is followed by an Acquire, in case it had
// just expired.
func markOn(ctx context.Context, m marker, limit int, ttl time.Duration) (took bool, err error) {
	for range 3 {
		if m.canExtend() {
			if err := m.extend(ctx, ttl); !errors.Is(err, ErrNotHeld) {
				return false, err
			}
		}
		err := m.acquire(ctx, ttl)
		if !errors.Is(err, ErrNotAcquired) {
			return err == nil, err // taken, or failed
		}
		if !m.canExtend() {
			return false, nil // held, and no telling by whom: taken to agree
		}
	}
	return false, otherMarker(m.st, limit)
}

// checkOn extends marker m under its token, and reports a mismatch if
// that finds it not held while Exists finds it held: under another
// limit's token. Twice, in case the marker was free and then taken under
// this limit in between. A free marker is left free; store failures are
// not reported.
func checkOn(ctx context.Context, m marker, limit int, ttl time.Duration) (took bool, err error) {
	if !m.canExtend() {
		return false, nil // no telling by whom the marker is held
	}
	for range 2 {
		if err := m.extend(ctx, ttl); !errors.Is(err, ErrNotHeld) {
			return false, nil // ours, refreshed; or failed
		}
		if held, err := m.exists(ctx); err != nil || !held {
			return false, nil
		}
	}
	return false, otherMarker(m.st, limit)
}

func otherMarker(st *storeRef, limit int) error {
	return fmt.Errorf("%w: permits are held under a limit other than %d (%s holds the marker of another)", ErrLimitMismatch, limit, st.name)
}

// wait implements engine: it waits for a release of any of (up to
// maxWaitSlots of) the slots.
func (s *slotSemaphore) wait(ctx context.Context, op, resource string, _ *Error) bool {
	if s.waitFor == nil {
		return false
	}
	n, first := min(s.limit, maxWaitSlots), rand.IntN(s.limit)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	woke := make(chan bool, n)
	for i := range n {
		name := slotName(resource, (first+i)%s.limit)
		go func() { woke <- s.waitFor(wctx, op, name) }()
	}
	woken := false
	for range n {
		if <-woke && !woken {
			woken = true
			cancel()
		}
	}
	return woken
}

// hears implements hearer: watching only some slots, or through a
// MultiLocker only some stores, the wait misses the releases of the
// others, so the retry loop bounds it by the retry delay, as a poll, and
// not by how long a permit may be held.
func (s *slotSemaphore) hears(*Error) hearing {
	stores := notifyAll(s.stores)
	return hearing{some: true, all: s.limit <= maxWaitSlots && stores, stores: stores}
}

// permitToken is the token of a permit on slot of a semaphore of limit,
// held under token: "slot/limit:token".
func permitToken(slot, limit int, token string) string {
	return strconv.Itoa(slot) + "/" + strconv.Itoa(limit) + ":" + token
}

// slotLock returns the lock on its slot that the permit l stands for. A
// token that names no slot of the semaphore, or a slot of a semaphore of
// another limit (whose slots have the same names), is not a permit it
// holds: the error matches ErrNotHeld, as a store that keeps permits
// itself answers (see Semaphore.Unlock), not ErrInvalid.
func (s *slotSemaphore) slotLock(op string, l Lock) (Lock, error) {
	head, token, ok := strings.Cut(l.Token, ":")
	slotPart, limitPart, ok2 := strings.Cut(head, "/")
	slot, err := strconv.Atoi(slotPart)
	limit, err2 := strconv.Atoi(limitPart)
	switch {
	case !ok || !ok2 || err != nil || err2 != nil || slot < 0 || token == "" || permitToken(slot, limit, token) != l.Token:
		// The last: the numbers as permitToken writes them, so that one
		// permit has one token ("01/4:t" is not "1/4:t").
		return Lock{}, notPermit(op, l.Resource, "the Lock's token names no slot of a semaphore built from plain locks")
	case limit != s.limit:
		return Lock{}, notPermit(op, l.Resource, "the Lock's token names a permit of a semaphore of limit %d, not %d", limit, s.limit)
	case slot >= s.limit:
		return Lock{}, notPermit(op, l.Resource, "the Lock's token names permit %d, beyond the semaphore's limit of %d", slot, s.limit)
	}
	return Lock{Resource: slotName(l.Resource, slot), Token: token, ValidUntil: l.ValidUntil, Fence: l.Fence}, nil
}

// notPermit reports a Lock whose token is not a permit of the semaphore:
// it matches ErrNotHeld.
func notPermit(op, resource, format string, args ...any) error {
	return &Error{Op: op, Resource: resource, Err: fmt.Errorf("%w ("+format+")", append([]any{ErrNotHeld}, args...)...)}
}

// IsLocked implements [Locker]: whether any slot is held.
func (s *slotSemaphore) IsLocked(ctx context.Context, resource string) (bool, error) {
	n, err := s.count(ctx, "islocked", resource, 1)
	return n > 0, err
}

func (s *slotSemaphore) permits(ctx context.Context, resource string) (int, error) {
	return s.count(ctx, "permits", resource, s.limit)
}

// countWidth bounds the slots count asks about at once.
const countWidth = 16

// count counts the held slots of resource, asking about up to countWidth
// at once, and stops once it found enough.
func (s *slotSemaphore) count(ctx context.Context, op, resource string, enough int) (int, error) {
	if err := s.checkQuery(ctx, op, resource); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	n, failed := 0, error(nil)
	turns := make(chan struct{}, countWidth)
	var wg sync.WaitGroup
	for i := range s.limit {
		turns <- struct{}{}
		mu.Lock()
		done := n >= enough || failed != nil
		mu.Unlock()
		if done {
			break
		}
		wg.Go(func() {
			defer func() { <-turns }()
			held, err := s.locker.IsLocked(ctx, slotName(resource, i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case n >= enough || failed != nil:
			case err != nil:
				failed = err
				cancel()
			case held:
				if n++; n >= enough {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		return 0, renamed(failed, resource)
	}
	return n, nil
}
