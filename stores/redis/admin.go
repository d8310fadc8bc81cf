package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

// The operations below are for administrative tools, such as lockctl's
// status and release --force, that inspect and clear locks they do not
// hold. Applications have no use for them: a lock is released by its
// owner's token (Release), and the lock of an owner that died runs out its
// TTL. They keep the key layout (see keys.go) inside this package.

// ForceRelease deletes resource's lock whoever holds it, and wakes the
// callers waiting for it as Release does. It reports whether the resource
// was held. It is meant for administrative tools (lockctl release
// --force), for a lock whose owner is known to be gone.
//
// The owner is not told: it finds out at its next Extend or Release, which
// report lock.ErrNotHeld (lock.Run then cancels its function's context
// with lock.ErrLost), and until then it may go on as if it held the lock
// while another owner takes it. The fence counter is kept, so later fences
// still increase.
func (s *Store) ForceRelease(ctx context.Context, resource string) (bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	lockKey, waitersKey := s.lockAndWaiters(resource)
	n, err := s.eval(ctx, &forceReleaseScript, lockKey, waitersKey, "", "", "").AsInt64()
	if err != nil {
		return false, s.failed(ctx, err)
	}
	return n == 1, nil
}

// LastFence returns the last fence AcquireFenced handed out for resource,
// and false if there is none: the resource was never locked with a fence,
// or not within the fence retention (see WithFenceRetention), or the
// counter was lost with a restart. It is meant for administrative tools
// (lockctl status). While a lock taken with AcquireFenced — as the lockers
// take it — is held, the last fence is its holder's; the next holder gets
// a greater one.
func (s *Store) LastFence(ctx context.Context, resource string) (uint64, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return 0, false, err
	}
	_, fenceKey := s.keys(resource)
	v, err := s.client.Do(ctx, s.client.B().Arbitrary("GET").Keys(fenceKey).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, false, nil
	case err != nil:
		return 0, false, s.failed(ctx, err)
	}
	fence, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("redis: fence counter %q holds %q, not a fence: %w", fenceKey, v, err)
	}
	return fence, true, nil
}
