package brokenstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Stores a round trip away from their server, whose calls a deadline may
// cut short while the answer is on its way.

// remote replaces the methods of f that change or read a lock by the
// memory store's, made a round trip of rtt away: each call reaches the
// server, and is applied, half a round trip after it is sent, and is
// answered half a round trip later, or, if ctx ends before the answer
// comes, answered by late(ctx, refusal) instead (refusal is the call's
// "no": ErrNotAcquired, ErrNotHeld, or nil for a read). A call whose
// context ends before it reaches the server still reaches it, a round
// trip after that, after the caller's next call: it changes the lock
// after that call did. A call whose context has ended before it is
// sent returns the context's error and changes nothing. Start makes the
// call in a goroutine of its own, so that a caller does not wait for
// another call's answer.
func remote(s *Store, mem *memory.Store, f *Funcs, rtt time.Duration, late func(ctx context.Context, refusal error) error) {
	type result struct {
		fence uint64
		held  bool
		err   error
	}
	roundTrip := func(ctx context.Context, refusal error, apply func() result) result {
		if err := ctx.Err(); err != nil {
			return result{err: err} // nothing sent
		}
		answer := make(chan result, 1)
		go func() {
			arrive := time.NewTimer(rtt / 2)
			defer arrive.Stop()
			select {
			case <-arrive.C:
			case <-ctx.Done():
				// The client gave the request up and sends the next ones
				// on another connection: this one reaches the server
				// after them.
				time.Sleep(rtt)
			}
			answer <- apply()
		}()
		t := time.NewTimer(rtt)
		defer t.Stop()
		select {
		case <-t.C:
			return <-answer
		case <-ctx.Done():
			return result{err: late(ctx, refusal)}
		}
	}
	bg := context.Background()
	f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
		r := roundTrip(ctx, lock.ErrNotAcquired, func() result {
			fence, err := mem.AcquireFenced(bg, resource, token, ttl)
			return result{fence: fence, err: err}
		})
		return r.fence, r.err
	}
	f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return roundTrip(ctx, lock.ErrNotAcquired, func() result { return result{err: mem.Acquire(bg, resource, token, ttl)} }).err
	}
	f.Release = func(ctx context.Context, resource, token string) error {
		return roundTrip(ctx, lock.ErrNotHeld, func() result { return result{err: mem.Release(bg, resource, token)} }).err
	}
	f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return roundTrip(ctx, lock.ErrNotHeld, func() result { return result{err: mem.Extend(bg, resource, token, ttl)} }).err
	}
	f.Exists = func(ctx context.Context, resource string) (bool, error) {
		r := roundTrip(ctx, nil, func() result {
			held, err := mem.Exists(bg, resource)
			return result{held: held, err: err}
		})
		return r.held, r.err
	}
	f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
		go func() { done(c.Run(ctx, s)) }()
	}
}

// TransportTimeouts is a correct store a round trip of rtt away from its
// server. A call whose deadline passes while its answer is on its way
// returns the transport's error, an i/o timeout wrapping
// os.ErrDeadlineExceeded (not context.DeadlineExceeded), as a client
// that sets its socket's deadline from the context's does; one whose
// context is canceled returns the context's error. lock.Store allows
// either for an outcome the store cannot be sure of.
func TransportTimeouts(rtt time.Duration) *Store {
	return New(func(s *Store, mem *memory.Store, f *Funcs) {
		remote(s, mem, f, rtt, func(ctx context.Context, _ error) error {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("read tcp 127.0.0.1:50000->127.0.0.1:6379: %w", os.ErrDeadlineExceeded)
			}
			return ctx.Err()
		})
	})
}

// LateRefusals is a store a round trip of rtt away from its server that
// answers a call whose context ends while its answer is on its way, the
// call applied already, as refused: ErrNotAcquired for an acquisition,
// ErrNotHeld for a release or an extension, as a client that maps "no
// reply" to a refusal does. A call whose context has ended before it is
// sent is answered with the context's error, as it should be. A locker
// whose TryLock is so refused does not clean up, and the lock, held by a
// token nobody has, stays for its whole TTL.
func LateRefusals(rtt time.Duration) *Store {
	return New(func(s *Store, mem *memory.Store, f *Funcs) {
		remote(s, mem, f, rtt, func(ctx context.Context, refusal error) error {
			if refusal == nil {
				return ctx.Err()
			}
			return refusal
		})
	})
}
