package goredis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisproto"
)

// AcquireFenced implements [lock.Fencer]: Acquire and a fence, set
// atomically by one script in one round trip. Fences come from a
// per-resource counter seeded from the Redis server's clock in
// microseconds (see the package documentation on fencing), shared with
// the rueidis store.
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return 0, err
	}
	if s.guard > 0 {
		return s.acquireGuarded(ctx, true, resource, token, ttl)
	}
	lockKey, fenceKey := redisproto.LockAndFence(s.prefix, resource)
	if s.replicas > 0 {
		return s.acquireReplicated(ctx, true, lockKey, fenceKey, token, ttl)
	}
	tok := &sentArg{v: token}
	fence, err := s.eval(ctx, &redisproto.Acquire, []string{lockKey, fenceKey}, tok, redisproto.Millis(ttl), redisproto.Millis(s.fenceRetention)).Int64()
	switch {
	case err != nil:
		return 0, s.failed(ctx, err)
	case fence == 0:
		return s.refusedFenced(ctx, lockKey, fenceKey, tok)
	}
	return uint64(fence), nil
}

// refusedFenced returns the outcome of a fenced acquisition that found
// the lock held: lock.ErrNotAcquired, unless the script was sent more
// than once and the lock holds the token — an earlier send took it (see
// do.go) — in which case the fence that send handed out is the counter's
// value, as nobody else can have taken the lock since. It reads the lock
// and the counter together (MGET: they share a hash slot), on the path of
// a re-sent refusal only.
func (s *Store) refusedFenced(ctx context.Context, lockKey, fenceKey string, tok *sentArg) (uint64, error) {
	if !tok.resent() {
		return 0, lock.ErrNotAcquired
	}
	vals, err := s.read(ctx, lockKey, "mget", lockKey, fenceKey).Slice()
	if err != nil {
		return 0, s.failed(ctx, err)
	}
	if len(vals) != 2 || vals[0] != tok.v {
		return 0, lock.ErrNotAcquired
	}
	v, _ := vals[1].(string)
	fence, err := strconv.ParseUint(v, 10, 64)
	if err != nil || fence == 0 {
		return 0, fmt.Errorf("acquisition of %q: %w; the lock holds the token, but its fence counter %q holds %v", lockKey, errUnknownOutcome, fenceKey, vals[1])
	}
	return fence, nil
}
