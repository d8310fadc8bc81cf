package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisproto"
)

// GuardKey is the key under which WithRestartGuard keeps its marker: one
// per server, outside every store's prefix, as it speaks for the whole
// server (a restart or a flush loses the locks of every prefix at once).
const GuardKey = redisproto.GuardKey

// ErrRecovering reports that a server under WithRestartGuard may have lost
// locks (it restarted without persistence, was flushed, or lost its data
// in a failover) and grants none until a maximum TTL has passed since it
// noticed. It wraps lock.ErrUnavailable: nobody holds the lock there, the
// server just cannot vote yet, so a lock.MultiLocker counts it as a failed
// store and gathers its quorum from the others.
var ErrRecovering = fmt.Errorf("redis: server may have lost its locks and grants none until a maximum TTL has passed: %w", lock.ErrUnavailable)

// WithRestartGuard makes the store refuse to grant locks on a server that
// may have forgotten locks it granted, until maxTTL has passed: the
// "delayed restart" of the Redlock algorithm, enforced by the server
// instead of by its operators. maxTTL must be at least the longest TTL
// that any client of the server uses, and every client that takes locks
// on the server must use the guard.
//
// Why: a Redis server without persistence forgets every lock when it
// restarts. Redlock survives the loss of a minority of its servers, but
// not a server coming back empty at once: a client that holds a lock on a
// bare majority including that server is left with a minority, and
// another client can gather a new majority with the restarted server's
// fresh vote while the first still holds the lock. A server that grants
// nothing for one maximum TTL after a restart cannot help anyone take
// over a lock that is still valid elsewhere.
//
// How: guarded acquisitions run a script that first reads a marker key,
// GuardKey, which holds the server time (TIME, in milliseconds) at which
// the server was first seen by a guarded store, and never expires. If the
// marker is missing, the server has lost its data since — it restarted
// without persistence, was flushed, or is a replica promoted without it —
// or has just been deployed (it cannot tell the two apart): the script
// writes the marker and refuses. While the server time is less than the
// marker plus maxTTL it refuses; afterwards it grants as usual. A refusal
// is an error matching ErrRecovering (and lock.ErrUnavailable), never
// lock.ErrNotAcquired. The check is part of the acquisition's own
// script, so it costs no round trip, works for every client and process
// at once, and uses only the server's clock; it costs a GET and a TIME
// per acquisition, and acquisitions always run as a script.
//
// Limits: a brand-new server, or one flushed on purpose, grants nothing
// for maxTTL either. A restart that keeps its data but loses its last
// writes (an RDB snapshot older than the last locks, an AOF with
// appendfsync everysec losing its last second) keeps the marker too, and
// is not detected: with such persistence, delay restarts by maxTTL, or
// use appendfsync always. Setting the server's clock forward shortens
// the wait. An eviction policy that evicts keys without a TTL (allkeys-*)
// may evict the marker, which only makes the server wait again.
//
// The guard is meant for independent masters (lock.NewMulti): New
// refuses it for a Redis Cluster client (the marker lives outside the
// locks' hash slots) and together with WithWaitReplicas.
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
func (c *config) checkGuard(client rueidis.Client) error {
	return redisproto.CheckGuardUse(c.guard, c.replicas, client.Mode() == rueidis.ClientModeCluster)
}

// acquireGuarded is Acquire and AcquireFenced under the restart guard.
func (s *Store) acquireGuarded(ctx context.Context, fenced bool, resource, token string, ttl time.Duration) (uint64, error) {
	lockKey, fenceKey := s.keys(resource)
	flag := "0"
	if fenced {
		flag = "1"
	}
	keys, args := [3]string{lockKey, fenceKey, GuardKey}, [5]string{token, s.ttlArg(ttl), s.retentionArg, s.guardArg, flag}
	cmd := func(full bool) rueidis.Completed {
		if full {
			return s.client.B().Eval().Script(guardedScript.Src).Numkeys(3).Key(keys[:]...).Arg(args[:]...).Build()
		}
		return s.client.B().Evalsha().Sha1(guardedScript.SHA).Numkeys(3).Key(keys[:]...).Arg(args[:]...).Build()
	}
	r := s.client.Do(ctx, cmd(false))
	if isNoScript(r.Error()) {
		r = s.client.Do(ctx, cmd(true))
	}
	n, err := r.AsInt64()
	switch {
	case err != nil:
		return 0, s.failed(ctx, err)
	case n < 0:
		return 0, fmt.Errorf("%w (for another %v)", ErrRecovering, time.Duration(-n)*time.Millisecond)
	case n == 0:
		return 0, lock.ErrNotAcquired
	case !fenced:
		return 0, nil
	}
	return uint64(n), nil
}
