package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/lockkit/lock"
)

var _ lock.HolderReader = (*Store)(nil)

// Holder implements [lock.HolderReader] with one SELECT of a live lock's
// token: it returns the token's public part (lock.HolderOf) only.
func (s *Store) Holder(ctx context.Context, resource string) (string, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return "", false, err
	}
	var token []byte
	err := queryRow(ctx, s.pool, s.q.holder, []any{[]byte(resource)}, &token)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, s.failed(ctx, err)
	}
	return lock.HolderOf(string(token)), true, nil
}
