package redisproto

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockkit/lock"
)

// CheckCall validates the arguments of a store call and its context,
// before anything is sent: a nil context, an empty token, a non-positive
// TTL or a resource ValidateResource refuses is an error wrapping
// lock.ErrInvalid; a context that has ended returns its error. store names
// the store in errors ("redis", "goredis").
func CheckCall(ctx context.Context, store, resource, token string, ttl time.Duration) error {
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
	return ValidateResource(store, resource)
}

// Failed returns the error of a call that did not get a clear answer: the
// context's error if it ended (the client's error may be a bare context
// error, or a connection error caused by it), wrapping the client's error
// too, and the client's error otherwise. Either way the outcome is
// unknown, and it is never reported as lock.ErrNotAcquired or
// lock.ErrNotHeld.
func Failed(ctx context.Context, err error) error {
	ctxErr := ctx.Err()
	if ctxErr == nil || errors.Is(err, ctxErr) {
		return err
	}
	return fmt.Errorf("%w: %w", ctxErr, err)
}
