package postgres

import (
	"context"
)

// ForceRelease deletes the lock on resource whoever holds it, and reports
// whether it was held. Its holder learns of it at its next Extend or
// Release (lock.ErrNotHeld). It is for administrative tools such as
// lockctl (release --force), not applications.
func (s *Store) ForceRelease(ctx context.Context, resource string) (bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	o, err := s.run(ctx, &s.q.forceRelease, args{resource: resource, n: 1})
	if err != nil {
		return false, s.failed(ctx, err)
	}
	return o.rows > 0, nil
}
