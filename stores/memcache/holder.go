package memcache

import (
	"context"
	"errors"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
)

var _ lock.HolderReader = (*Store)(nil)

// Holder implements [lock.HolderReader] with one get: the public part of
// the holder's token (lock.HolderOf), or false if the item is gone.
func (s *Store) Holder(ctx context.Context, resource string) (string, bool, error) {
	if err := check(ctx, resource, "-", 1); err != nil {
		return "", false, err
	}
	key := s.key(resource)
	if ctx.Done() == nil {
		return s.holder(key)
	}
	var holder string
	var held bool
	c := detach(func(c *call) { holder, held, c.err = s.holder(key) })
	if err := c.wait(ctx); err != nil {
		return "", false, err
	}
	return holder, held, nil // written before c.done closed
}

func (s *Store) holder(key string) (string, bool, error) {
	switch item, err := s.get(key); {
	case err == nil:
		return lock.HolderOf(string(item.Value)), true, nil
	case errors.Is(err, gomemcache.ErrCacheMiss):
		return "", false, nil
	default:
		return "", false, requestError("get", err)
	}
}
