package goredis

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisproto"
)

// GuardKey is the key under which WithRestartGuard keeps its marker — the
// rueidis store's too, so that stores of both kinds guard one server
// together.
const GuardKey = redisproto.GuardKey

// ErrRecovering reports that a server under WithRestartGuard may have lost
// locks (it restarted without persistence, was flushed, or lost its data
// in a failover) and grants none until a maximum TTL has passed since it
// noticed. It wraps lock.ErrUnavailable: nobody holds the lock there, the
// server just cannot vote yet, so a lock.MultiLocker counts it as a failed
// store and gathers its quorum from the others.
var ErrRecovering = fmt.Errorf("goredis: server may have lost its locks and grants none until a maximum TTL has passed: %w", lock.ErrUnavailable)

// WithRestartGuard makes the store refuse to grant locks on a server that
// may have forgotten locks it granted, until maxTTL has passed: the
// "delayed restart" of the Redlock algorithm, enforced by the server. It
// is the rueidis store's WithRestartGuard, with the same marker and
// script (see its documentation for the why, the how and the limits):
// maxTTL must be at least the longest TTL that any client of the server
// uses, and every client that takes locks on the server must use the
// guard. A refusal is an error matching ErrRecovering (and
// lock.ErrUnavailable), never lock.ErrNotAcquired.
//
// The guard is meant for independent masters (lock.NewMulti): New
// refuses it for a cluster client (the marker lives outside the locks'
// hash slots) and together with WithWaitReplicas.
func WithRestartGuard(maxTTL time.Duration) Option {
	return func(c *config) error {
		if err := redisproto.CheckRestartGuard(maxTTL); err != nil {
			return err
		}
		c.guard = maxTTL
		return nil
	}
}

// checkGuard validates the guard against the other options and the client.
func (s *Store) checkGuard() error {
	return redisproto.CheckGuardUse(s.guard, s.replicas, s.cluster)
}

// acquireGuarded is Acquire and AcquireFenced under the restart guard.
func (s *Store) acquireGuarded(ctx context.Context, fenced bool, resource, token string, ttl time.Duration) (uint64, error) {
	lockKey, fenceKey := redisproto.LockAndFence(s.prefix, resource)
	flag := "0"
	if fenced {
		flag = "1"
	}
	tok := &sentArg{v: token}
	n, err := s.eval(ctx, &redisproto.Guarded, []string{lockKey, fenceKey, GuardKey},
		tok, redisproto.Millis(ttl), redisproto.Millis(s.fenceRetention), redisproto.Millis(s.guard), flag).Int64()
	switch {
	case err != nil:
		return 0, s.failed(ctx, err)
	case n < 0:
		return 0, fmt.Errorf("%w (for another %v)", ErrRecovering, time.Duration(-n)*time.Millisecond)
	case n == 0 && fenced:
		return s.refusedFenced(ctx, lockKey, fenceKey, tok)
	case n == 0:
		return 0, s.refused(ctx, lockKey, tok)
	case !fenced:
		return 0, nil
	}
	return uint64(n), nil
}
