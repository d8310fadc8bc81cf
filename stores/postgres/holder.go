package postgres

import (
	"context"

	"github.com/lockkit/lock"
)

var _ lock.HolderReader = (*Store)(nil)

// Holder implements [lock.HolderReader] with one SELECT of a live lock's
// token: it returns the token's public part (lock.HolderOf) only.
func (s *Store) Holder(ctx context.Context, resource string) (string, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return "", false, err
	}
	o, err := s.run(ctx, &s.q.holder, args{resource: resource, n: 1})
	switch {
	case err != nil:
		return "", false, s.failed(ctx, err)
	case o.rows == 0:
		return "", false, nil
	}
	return lock.HolderOf(string(o.b)), true, nil
}
