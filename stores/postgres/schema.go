package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockkit/lock/internal/storecall"
)

// Schema returns the SQL that creates the store's table and sequence, as
// [Store.Migrate] runs it, for teams that apply their own migrations. It
// takes the same options as New, and refuses the same bad ones; only
// WithTable changes the SQL. It is idempotent: every statement says IF
// NOT EXISTS.
//
// The role the application connects as needs SELECT, INSERT, UPDATE and
// DELETE on the table, USAGE, SELECT and UPDATE on the sequence, and
// USAGE on the schema if WithTable names one; no more, for every call
// but Migrate.
func Schema(opts ...Option) (string, error) {
	c, err := newConfig(opts)
	if err != nil {
		return "", err
	}
	return c.schemaSQL(), nil
}

func (c config) schemaSQL() string {
	n := c.names()
	var b strings.Builder
	if c.schema != "" {
		fmt.Fprintf(&b, "CREATE SCHEMA IF NOT EXISTS %s;\n\n", pgx.Identifier{c.schema}.Sanitize())
	}
	fmt.Fprintf(&b, `-- One row per lock, held until expires_at on the database's clock.
-- A released lock's row is deleted; an expired one is taken over in
-- place, or deleted by a sweep.
CREATE TABLE IF NOT EXISTS %s (
    resource   bytea       PRIMARY KEY,
    token      bytea       NOT NULL,
    expires_at timestamptz NOT NULL,
    waited     boolean     NOT NULL DEFAULT false -- notify the release
);

-- The fences: CACHE 1 (the default) is required, so that fences are
-- handed out in the order of the acquisitions across sessions.
CREATE SEQUENCE IF NOT EXISTS %s AS bigint CACHE 1;
`, n.table, n.sequence)
	return b.String()
}

// quoteLiteral quotes an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// Migrate creates the store's table and sequence if they do not exist
// (the SQL of [Schema]) and checks the sequence: it must not cache
// values, or fences would not follow the order of acquisitions. Run it
// once at deployment or at start-up; concurrent Migrates are safe. It
// needs the privileges to create them (and the schema, if WithTable names
// one). A nil ctx gives an error wrapping lock.ErrInvalid.
func (s *Store) Migrate(ctx context.Context) error {
	if err := storecall.Check(ctx, "-", 1); err != nil {
		return err
	}
	// One transaction, serialised by an advisory lock: concurrent CREATE
	// ... IF NOT EXISTS can collide in the catalog.
	sql := "BEGIN;\nSELECT pg_advisory_xact_lock(hashtext(" + quoteLiteral("lockkit migrate "+s.names.table) + "));\n" +
		s.config.schemaSQL() + "COMMIT;"
	_, err := s.pool.Exec(ctx, sql)
	// A session may still see, in its catalog caches, the objects as
	// missing that a concurrent Migrate created while it waited for the
	// advisory lock: it then collides with them, and a new transaction
	// sees them.
	for i := 0; i < 3 && isDuplicate(err); i++ {
		_, err = s.pool.Exec(ctx, sql)
	}
	if err != nil {
		return fmt.Errorf("postgres: migrating %s: %w", s.names.table, s.failed(ctx, err))
	}
	var cache int64
	err = s.pool.QueryRow(ctx, "SELECT seqcache FROM pg_sequence WHERE seqrelid = $1::regclass", s.names.sequence).Scan(&cache)
	if err != nil {
		return fmt.Errorf("postgres: checking sequence %s: %w", s.names.sequence, s.failed(ctx, err))
	}
	if cache != 1 {
		return fmt.Errorf("postgres: sequence %s caches %d values per session: fences would not follow the order of acquisitions; ALTER SEQUENCE %s CACHE 1", s.names.sequence, cache, s.names.sequence)
	}
	return nil
}

// isDuplicate reports whether err is PostgreSQL's answer to creating an
// object that exists: unique_violation (in the catalog), duplicate_table,
// duplicate_object or duplicate_schema.
func isDuplicate(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "23505", "42P07", "42710", "42P06":
		return true
	}
	return false
}
