// Package storecall is what the stores of this repository share about a
// single call, whatever their backend: the checks of its arguments before
// anything is sent, and the error of a call whose outcome is unknown.
package storecall

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/ctxend"
)

// Check validates the arguments of a store call and its context, before
// anything is sent: a nil context, an empty token or a non-positive TTL is
// an error wrapping lock.ErrInvalid; a context that has ended returns its
// error. Calls without a token or a TTL (Release, Exists) pass "-" and 1.
// Stores add their own limits (resource names, TTLs) after it.
func Check(ctx context.Context, token string, ttl time.Duration) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: nil context", lock.ErrInvalid)
	case ctx.Err() != nil:
		return ctx.Err()
	case token == "":
		return fmt.Errorf("%w: empty token", lock.ErrInvalid)
	case ttl <= 0:
		return fmt.Errorf("%w: ttl is %v: want > 0", lock.ErrInvalid, ttl)
	}
	return nil
}

// Failed returns the error of a call that did not get a clear answer: the
// context's error if it ended (the client's error may be a bare context
// error, or a connection error caused by it), wrapping the client's error
// too, and the client's error otherwise. Either way the outcome is
// unknown, and it is never lock.ErrNotAcquired or lock.ErrNotHeld. A
// deadline that has passed counts as ended: a client's socket deadline
// can fire a moment before ctx reports it.
func Failed(ctx context.Context, err error) error {
	ctxErr := ctxend.Err(ctx)
	if ctxErr == nil || errors.Is(err, ctxErr) {
		return err
	}
	return fmt.Errorf("%w: %w", ctxErr, err)
}

// CheckName checks the argument of a store's WithName option.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: WithName(\"\"): the name may not be empty", lock.ErrInvalid)
	}
	return nil
}

// MaxRaise is the largest fence a counter-based store's RaiseFence takes:
// 2^63-2, so that the fence after it, 2^63-1 (math.MaxInt64), still fits
// a signed 64-bit counter (a PostgreSQL sequence ends there) and the
// unsigned counters of the other stores never wrap around to 0.
const MaxRaise = math.MaxInt64 - 1

// CheckRaise refuses, with an error wrapping lock.ErrInvalid, a RaiseFence
// to a fence above MaxRaise. store names the store in the message.
func CheckRaise(store string, fence uint64) error {
	if fence > MaxRaise {
		return fmt.Errorf("%w: RaiseFence(%d): want at most 2^63-2: the %s store's next fence must exceed it and be at most 2^63-1", lock.ErrInvalid, fence, store)
	}
	return nil
}
