package memcache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/storecall"
)

// Fences. One counter item per store prefix, "<prefix>#fence", holds the
// last fence handed out for any resource; it never expires. A fenced
// acquisition takes the lock with add and then, while holding it, draws
// the fence with incr — shared with the acquisitions that draw at the
// same moment (fencebatch.go): incr is atomic, so fences increase
// strictly in the order in which holders take the lock. When the counter
// is missing — the server restarted or evicted it, or no lock was ever
// fenced — the store waits FenceGuard and creates it again with the
// clock's time in microseconds since 1970, once for a shared incr. The
// package doc says why that keeps fences increasing across the loss, and
// under which assumptions.

// fenceKeySuffix follows the prefix in the counter's key. No resource maps
// to it: verbatim keys never start with '#' after the prefix, and hashed
// keys are 44 bytes long after it.
const fenceKeySuffix = "#fence"

// DefaultFenceGuard is the fence guard of a store made without
// WithFenceGuard.
const DefaultFenceGuard = 100 * time.Millisecond

// fenceAttempts bounds the rounds of incr and re-creation of a counter
// that goes missing again at once.
const fenceAttempts = 3

// WithFenceGuard sets how long the store waits before it creates the fence
// counter again after finding it missing: more than the largest
// difference between the clocks of the machines that lock through the
// server (see the package documentation on fences). The default is
// DefaultFenceGuard, for clocks less than 100ms apart. New refuses a
// negative guard.
func WithFenceGuard(d time.Duration) Option { return func(s *Store) { s.fenceGuard = d } }

// AcquireFenced implements [lock.Fencer]: it takes the lock as Acquire
// does and, once it holds it, draws the fence from the store's counter
// with incr: sent with the add, in its round trip, by a store made
// WithServer; otherwise shared by the acquisitions of the store that draw
// at the same moment, unless the client keeps two idle connections or
// fewer (see the package documentation on fences). If the fence cannot be
// drawn it releases the lock and returns the error.
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	if err := check(ctx, resource, token, ttl); err != nil {
		return 0, err
	}
	exp, err := expiration(ttl, time.Now())
	if err != nil {
		return 0, err
	}
	item := s.lockItem(resource, token, exp)
	if ctx.Done() == nil {
		return s.addFenced(item, ttl)
	}
	c := detach(func(c *call) { c.fence, c.err = s.addFenced(item, ttl) })
	err = c.wait(ctx)
	if c.running() {
		s.pending.add(item.Key, token, c.done)
		return 0, err
	}
	return c.fence, err
}

func (s *Store) addFenced(item *gomemcache.Item, ttl time.Duration) (uint64, error) {
	var fence uint64
	var drawn bool
	var err error
	if s.pipe == nil {
		err = s.add(item)
	} else {
		fence, drawn, err = s.addPiped(item, ttl, s.fenceKey)
	}
	if err != nil {
		return 0, err
	}
	if !drawn {
		fence, err = s.drawFence()
	}
	if err != nil {
		return 0, s.giveBack(item, err)
	}
	return fence, nil
}

// giveBack releases the lock of item, which the store took but cannot
// hand over because of err, and returns err, with the release's failure
// if it failed. Not by swap: if the add was abandoned, swap would wait
// for its end.
func (s *Store) giveBack(item *gomemcache.Item, err error) error {
	if rerr := s.swapNow(context.Background(), item.Key, string(item.Value), -1); rerr != nil && !errors.Is(rerr, lock.ErrNotHeld) {
		return fmt.Errorf("%w (and the lock could not be released: %v)", err, rerr)
	}
	return err
}

// addPiped takes the lock of item, whose TTL is ttl, with an add through
// the store's own connections (WithServer), and remembers its CAS id for
// the Release. Unless counter is "", it draws a fence from counter in the
// same round trip; drawn is false when it did not (the counter is
// missing), and the caller draws it then. If the add took the lock but
// the incr's answer was lost, it gives the lock back and returns the
// error.
func (s *Store) addPiped(item *gomemcache.Item, ttl time.Duration, counter string) (fence uint64, drawn bool, err error) {
	a, err := s.pipe.add(item.Key, item.Value, item.Expiration, counter)
	if a.stored && a.cas != 0 {
		s.cas.record(item.Key, tokenOf(item), a.cas, a.server, ttl)
	}
	switch {
	case err != nil && a.stored:
		return 0, false, s.giveBack(item, requestError("incr", err))
	case err != nil:
		return 0, false, requestError("add", err)
	case !a.stored:
		return 0, false, lock.ErrNotAcquired
	}
	return a.fence, a.drawn, nil
}

// nextFence adds delta+1 to the counter and returns its new value: the
// next fence with delta 0. A missing counter is created again first.
func (s *Store) nextFence(delta uint64) (uint64, error) {
	var err error
	for range fenceAttempts {
		var fence uint64
		fence, err = s.client.Increment(s.fenceKey, delta+1)
		switch {
		case err == nil:
			return fence, nil
		case !errors.Is(err, gomemcache.ErrCacheMiss):
			return 0, requestError("incr", err)
		}
		if err = s.seedFence(); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("memcached lost the fence counter %d times in a row: %w", fenceAttempts, err)
}

// seedFence creates the missing fence counter, FenceGuard from now, with
// the clock's time in microseconds, the unit of the Redis stores' fences,
// so that a lock.MultiLocker may mix both. If another client created it
// meanwhile, that one stands.
func (s *Store) seedFence() error {
	time.Sleep(s.fenceGuard)
	seed := strconv.FormatInt(time.Now().UnixMicro(), 10)
	err := s.client.Add(&gomemcache.Item{Key: s.fenceKey, Value: []byte(seed)})
	if err != nil && !errors.Is(err, gomemcache.ErrNotStored) {
		return requestError("add", err)
	}
	return nil
}

// RaiseFence implements [lock.FenceRaiser]: it raises the store's fence
// counter, shared by every resource, to fence or above, with incr. It
// does not touch any lock. A fence above 2^63-2 is refused with an error
// matching lock.ErrInvalid: memcached's incr wraps around to 0 at 2^64.
func (s *Store) RaiseFence(ctx context.Context, resource string, fence uint64) error {
	if err := check(ctx, resource, "-", 1); err != nil {
		return err
	}
	if err := storecall.CheckRaise("memcache", fence); err != nil {
		return err
	}
	if ctx.Done() == nil {
		return s.raise(fence)
	}
	return detach(func(c *call) { c.err = s.raise(fence) }).wait(ctx)
}

func (s *Store) raise(fence uint64) error {
	last, err := s.readFence()
	switch {
	case errors.Is(err, gomemcache.ErrCacheMiss):
		last, err = s.nextFence(0)
	case err != nil:
		err = requestError("incr", err)
	}
	if err != nil || last >= fence {
		return err
	}
	// Concurrent draws between the read and this incr only raise the
	// counter further.
	_, err = s.nextFence(fence - last - 1)
	return err
}

// readFence reads the fence counter with an incr by 0, which changes
// nothing: a read, sent again on a broken connection (see get.go).
func (s *Store) readFence() (uint64, error) {
	for attempt := 0; ; attempt++ {
		last, err := s.client.Increment(s.fenceKey, 0)
		if !s.resend(attempt, err) {
			return last, err
		}
	}
}
