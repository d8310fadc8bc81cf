package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
)

// ErrNotReplicated reports that a lock was granted but fewer replicas than
// WithWaitReplicas asks for confirmed it in time, so the store released it
// again. It wraps lock.ErrUnavailable: the store could not provide a lock
// that survives a failover, and whether the release went through is not
// certain (the lockers release by token once more).
var ErrNotReplicated = fmt.Errorf("redis: lock not confirmed by enough replicas: %w", lock.ErrUnavailable)

// acquireReplicated acquires — with the acquire script when fenced, with
// SET NX PX otherwise — and runs WAIT right after it on the same
// connection, in one round trip. A dedicated connection is needed: WAIT
// counts the writes of the connection it runs on, and on a shared,
// pipelined connection, or after a cluster redirect to another node, it
// would count the wrong ones (a dedicated cluster connection reports a
// redirect as an error instead of following it).
func (s *Store) acquireReplicated(ctx context.Context, fenced bool, lockKey, fenceKey, token string, ttl time.Duration) (uint64, error) {
	var acquired, waited rueidis.RedisResult
	err := s.client.Dedicated(func(d rueidis.DedicatedClient) error {
		keys, args := [2]string{lockKey, fenceKey}, [3]string{token, s.ttlArg(ttl), s.retentionArg}
		acquire := func(full bool) rueidis.Completed {
			if fenced {
				return scriptCmd(d.B(), &acquireScript, full, &keys, &args)
			}
			return d.B().Set().Key(lockKey).Value(token).Nx().PxMilliseconds(millis(ttl)).Build()
		}
		wait := func() rueidis.Completed {
			return d.B().Wait().Numreplicas(int64(s.replicas)).Timeout(millis(s.replicaTimeout)).Build()
		}
		r := d.DoMulti(ctx, acquire(false), wait())
		if fenced && isNoScript(r[0].Error()) {
			r = d.DoMulti(ctx, acquire(true), wait())
		}
		acquired, waited = r[0], r[1]
		return nil
	})
	if err != nil {
		return 0, s.failed(ctx, err)
	}

	var fence int64
	if fenced {
		fence, err = acquired.AsInt64()
		if err == nil && fence == 0 {
			return 0, lock.ErrNotAcquired
		}
	} else if err = acquired.Error(); rueidis.IsRedisNil(err) {
		return 0, s.refused(ctx, lockKey)
	}
	if err != nil {
		return 0, s.failed(ctx, err)
	}

	acked, err := waited.AsInt64()
	if err == nil && acked >= int64(s.replicas) {
		return uint64(fence), nil
	}
	if err != nil {
		err = fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	} else {
		err = fmt.Errorf("%w: %d of %d replicas confirmed within %v", ErrNotReplicated, acked, s.replicas, s.replicaTimeout)
	}
	// Undo the unconfirmed lock, even if ctx has just ended.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(s.replicaTimeout, time.Second))
	defer cancel()
	if _, rerr := s.releaseKeys(rctx, lockKey, waitersOf(lockKey), token); rerr != nil {
		err = fmt.Errorf("%w; releasing it failed: %w", err, rerr)
	}
	return 0, s.failed(ctx, err)
}
