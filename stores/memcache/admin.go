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

func (s *Store) delete(key string) (bool, error) {
	switch err := s.client.Delete(key); {
	case err == nil:
		return true, nil
	case errors.Is(err, gomemcache.ErrCacheMiss):
		return false, nil
	default:
		return false, requestError("delete", err)
	}
}
