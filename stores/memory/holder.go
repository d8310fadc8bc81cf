package memory

import (
	"context"

	"github.com/lockkit/lock"
)

var _ lock.HolderReader = (*Store)(nil)

// Holder implements [lock.HolderReader]: the public part of the token
// that holds resource (lock.HolderOf). Faults injected for OpTTL apply to
// it too.
func (s *Store) Holder(ctx context.Context, resource string) (string, bool, error) {
	if err := check(ctx, resource, "-", 1); err != nil {
		return "", false, err
	}
	f, err := s.faults.before(ctx, OpTTL)
	if err != nil {
		return "", false, err
	}
	sh := s.shard(resource)
	sh.mu.Lock()
	now := s.now()
	var token string
	e := sh.locks[resource]
	held := e != nil && e.live(now)
	if held {
		token = e.token
	}
	sh.mu.Unlock()
	return lock.HolderOf(token), held, f.after(nil)
}
