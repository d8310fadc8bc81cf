package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// ForceRelease deletes the lock on resource whoever holds it, and reports
// whether it was held. Its holder learns of it at its next Extend or
// Release (lock.ErrNotHeld). It is for administrative tools such as
// lockctl (release --force), not applications.
func (s *Store) ForceRelease(ctx context.Context, resource string) (bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	var notified *string
	err := queryRow(ctx, s.pool, s.q.forceRelease, []any{[]byte(resource)}, &notified)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, s.failed(ctx, err)
	}
	return true, nil
}
