package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
)

func TestConformance(t *testing.T) {
	pool := shared(t)
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, pool) }, nil)
}

// TestConformanceExecMode runs the kit on a pool that may not keep
// prepared statements (QueryExecModeExec, as for PgBouncer in transaction
// mode): the store then sends its statements through pgx's Exec and
// QueryRow rather than its own prepared path.
func TestConformanceExecMode(t *testing.T) {
	pool := poolOf(t, sharedURL(t), func(c *pgxpool.Config) {
		c.MaxConns = 16
		c.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	})
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, pool) }, nil)
}
