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
// memory store's, made a round trip of rtt away: each call is applied at
// once, then answered rtt later, or, if ctx ends first, answered by
// late(ctx) instead. A call whose context has ended before it is sent
// returns the context's error and changes nothing. Start makes the call
// in a goroutine of its own, so that a caller does not wait for another
// call's answer.
func remote(s *Store, mem *memory.Store, f *Funcs, rtt time.Duration, late func(ctx context.Context, refusal error) error) {
	roundTrip := func(ctx context.Context, refusal error, apply func() error) error {
		if err := ctx.Err(); err != nil {
			return err // nothing sent
		}
		err := apply()
		t := time.NewTimer(rtt)
		defer t.Stop()
		select {
		case <-t.C:
			return err
		case <-ctx.Done():
			return late(ctx, refusal)
		}
	}
	bg := context.Background()
	f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (fence uint64, err error) {
		err = roundTrip(ctx, lock.ErrNotAcquired, func() (err error) {
			fence, err = mem.AcquireFenced(bg, resource, token, ttl)
			return err
		})
		if err != nil {
			return 0, err
		}
		return fence, nil
	}
	f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return roundTrip(ctx, lock.ErrNotAcquired, func() error { return mem.Acquire(bg, resource, token, ttl) })
	}
	f.Release = func(ctx context.Context, resource, token string) error {
		return roundTrip(ctx, lock.ErrNotHeld, func() error { return mem.Release(bg, resource, token) })
	}
	f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return roundTrip(ctx, lock.ErrNotHeld, func() error { return mem.Extend(bg, resource, token, ttl) })
	}
	f.Exists = func(ctx context.Context, resource string) (held bool, err error) {
		err = roundTrip(ctx, nil, func() (err error) {
			held, err = mem.Exists(bg, resource)
			return err
		})
		return held, err
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
