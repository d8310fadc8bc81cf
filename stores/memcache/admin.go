package memcache

import (
	"context"
	"errors"

	gomemcache "github.com/bradfitz/gomemcache/memcache"
)

// ForceRelease deletes resource's lock whoever holds it, with memcached's
// delete, and reports whether the resource was held. It is meant for
// administrative tools (lockctl release --force), for a lock whose owner
// is known to be gone; applications release by token with Release.
//
// The owner is not told: it finds out at its next Extend or Release, which
// report lock.ErrNotHeld (lock.Run then cancels its function's context
// with lock.ErrLost), and until then it may go on as if it held the lock
// while another owner takes it.
//
// A delete that fails on a connection a memcached restart broke is sent
// again on another (see Guarantees and limits in the package
// documentation): deleting twice deletes what deleting once does.
func (s *Store) ForceRelease(ctx context.Context, resource string) (bool, error) {
	if err := check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	key := s.key(resource)
	if ctx.Done() == nil {
		return s.delete(key)
	}
	c := detach(func(c *call) { c.held, c.err = s.delete(key) })
	if err := c.wait(ctx); err != nil {
		return false, err
	}
	return c.held, nil
}

// delete deletes key, sent again on a broken connection (see get.go):
// the answer is then the last delete's, which finds the key gone if an
// earlier one reached memcached.
func (s *Store) delete(key string) (bool, error) {
	for attempt := 0; ; attempt++ {
		switch err := s.client.Delete(key); {
		case s.resend(attempt, err):
			continue
		case err == nil:
			return true, nil
		case errors.Is(err, gomemcache.ErrCacheMiss):
			return false, nil
		default:
			return false, requestError("delete", err)
		}
	}
}
