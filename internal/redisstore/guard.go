package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
)

// GuardKey is the key under which the restart guard keeps its marker: one
// per server, outside every store's prefix, as it speaks for the whole
// server (a restart or a flush loses the locks of every prefix at once).
const GuardKey = "lockkit:restart-guard"

// ErrRecovering reports that a server under WithRestartGuard may have lost
// locks (it restarted without persistence, was flushed, or lost its data
// in a failover) and grants none until a maximum TTL has passed since it
// noticed. It wraps lock.ErrUnavailable: nobody holds the lock there, the
// server just cannot vote yet, so a lock.MultiLocker counts it as a failed
// store and gathers its quorum from the others.
var ErrRecovering = fmt.Errorf("redis: server may have lost its locks and grants none until a maximum TTL has passed: %w", lock.ErrUnavailable)

// guardedCmd returns the guarded acquisition of the lock at key.
func (s *Store) guardedCmd(fenced bool, key, token string, ttl time.Duration) Cmd {
	flag := "0"
	if fenced {
		flag = "1"
	}
	return script(guardedScript, []string{key, s.counterKey(key), GuardKey}, token, s.ttlArg(ttl), s.guardArg, flag, liftAheadArg)
}

// acquireGuarded is Acquire and AcquireFenced under the restart guard:
// one script, which also takes the fence (see guardedScript).
func (s *Store) acquireGuarded(ctx context.Context, fenced bool, key, token string, ttl time.Duration) (uint64, error) {
	return s.guarded(ctx, fenced, key, token, s.run(ctx, s.guardedCmd(fenced, key, token, ttl)))
}

// guarded returns the outcome of the guarded script.
func (s *Store) guarded(ctx context.Context, fenced bool, key, token string, r Reply) (uint64, error) {
	switch n := r.Int; {
	case r.Err != nil:
		return 0, s.failed(ctx, r.Err)
	case n < 0:
		return 0, fmt.Errorf("%w (for another %v)", ErrRecovering, time.Duration(-n)*time.Millisecond)
	case n == 0 && r.Resent:
		// The first send may have taken it: its fence is lost with its
		// answer, so take a new one while the lock is held.
		if err := s.refused(ctx, key, token, true); err != nil || !fenced {
			return 0, err
		}
		return s.lift(ctx, s.counterKey(key), 0)
	case n == 0:
		return 0, lock.ErrNotAcquired
	}
	hub.acquired(s, key)
	if !fenced {
		return 0, nil
	}
	return uint64(r.Int), nil
}
