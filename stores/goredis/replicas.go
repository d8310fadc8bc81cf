package goredis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisproto"
)

// ErrNotReplicated reports that a lock was granted but fewer replicas than
// WithWaitReplicas asks for confirmed it in time, so the store released it
// again. It wraps lock.ErrUnavailable: the store could not provide a lock
// that survives a failover, and whether the release went through is not
// certain (the lockers release by token once more).
var ErrNotReplicated = fmt.Errorf("goredis: lock not confirmed by enough replicas: %w", lock.ErrUnavailable)

// acquireReplicated acquires — with the acquire script when fenced, with
// SET NX PX otherwise — and runs WAIT right after it in one pipeline, so
// on one connection and in one round trip. WAIT counts the writes of the
// connection it runs on, and go-redis gives a pipeline a connection of
// its own; on a cluster the pipeline goes to the master of the lock's
// slot through that node's own client, which reports a redirect as an
// error instead of following it to a node where WAIT would count nothing.
func (s *Store) acquireReplicated(ctx context.Context, fenced bool, lockKey, fenceKey, token string, ttl time.Duration) (uint64, error) {
	var node redis.Cmdable = s.client
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		var err error
		if node, err = cc.MasterForKey(ctx, lockKey); err != nil {
			return 0, s.failed(ctx, err)
		}
	}
	tok := &sentArg{v: token}
	ms := redisproto.Millis(ttl)
	pipeline := func(full bool) (acquired, waited *redis.Cmd, err error) {
		if fenced {
			verb, script := "evalsha", redisproto.Acquire.SHA
			if full {
				verb, script = "eval", redisproto.Acquire.Src
			}
			acquired = redis.NewCmd(ctx, scriptArgs(verb, script, 2, []string{lockKey, fenceKey}, []any{tok, ms, redisproto.Millis(s.fenceRetention)})...)
		} else {
			acquired = redis.NewCmd(ctx, "set", lockKey, tok, "nx", "px", ms)
		}
		waited = redis.NewCmd(ctx, "wait", s.replicas, s.replicaTimeout.Milliseconds())
		err = s.run(ctx, func() {
			p := node.Pipeline()
			_ = p.Process(ctx, wrap(acquired))
			_ = p.Process(ctx, wrap(waited))
			_, _ = p.Exec(ctx)
		})
		return acquired, waited, err
	}
	acquired, waited, err := pipeline(false)
	if err == nil && fenced && isNoScript(acquired.Err()) {
		acquired, waited, err = pipeline(true)
	}
	if err != nil {
		return 0, s.failed(ctx, err)
	}

	var fence int64
	var resentOurs bool // refused, but an earlier send took it: see do.go
	if fenced {
		fence, err = acquired.Int64()
		if err == nil && fence == 0 {
			u, rerr := s.refusedFenced(ctx, lockKey, fenceKey, tok)
			if rerr != nil {
				return 0, rerr
			}
			fence, resentOurs = int64(u), true
		}
	} else if err = acquired.Err(); errors.Is(err, redis.Nil) {
		if rerr := s.refused(ctx, lockKey, tok); rerr != nil {
			return 0, rerr
		}
		err, resentOurs = nil, true
	}
	if err != nil {
		return 0, s.failed(ctx, err)
	}

	acked, err := waited.Int64()
	switch {
	case resentOurs:
		// The WAIT followed a send that wrote nothing: it says nothing of
		// the earlier one's replication.
		err = fmt.Errorf("%w: the lock was taken by an earlier send of the acquisition, whose replication is unknown", ErrNotReplicated)
	case err == nil && acked >= int64(s.replicas):
		return uint64(fence), nil
	case err != nil:
		err = fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	default:
		err = fmt.Errorf("%w: %d of %d replicas confirmed within %v", ErrNotReplicated, acked, s.replicas, s.replicaTimeout)
	}
	// Undo the unconfirmed lock, even if ctx has just ended.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(s.replicaTimeout, time.Second))
	defer cancel()
	if rerr := s.release(rctx, lockKey, redisproto.WaitersOf(lockKey), token); rerr != nil {
		err = fmt.Errorf("%w; releasing it failed: %w", err, rerr)
	}
	return 0, s.failed(ctx, err)
}
