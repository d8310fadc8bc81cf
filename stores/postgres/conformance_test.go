package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/pgtest"
)

// TestConformance runs the kit on a server of its own, which Restart
// kills (kill -9) and starts again on its data: what was committed
// survives, fences included (FencingAcrossRestart).
func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	pool := poolOf(t, srv.URL(""), func(c *pgxpool.Config) { c.MaxConns = 32 }) // as the shared pool: the MultiLocker rule runs three stores on it
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, pool) }, &conformance.Options{Restart: func(t *testing.T) {
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		// Drop the pool's connections to the killed server, so that no
		// call after the restart fails on one.
		pool.Reset()
	}})
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
