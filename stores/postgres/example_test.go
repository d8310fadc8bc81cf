package postgres_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/postgres"
)

// A service takes its locks in the database it already has: the store
// over its pgx pool, the table made once by Migrate.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	store, err := postgres.New(pool)
	if err != nil {
		panic(err)
	}
	if err := store.Migrate(ctx); err != nil {
		panic(err)
	}
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		panic(err)
	}

	l, err := locker.Lock(ctx, "invoices/42", 30*time.Second)
	if err != nil {
		panic(err)
	}
	defer locker.Unlock(ctx, l)
	// Write with the fence, so that a holder that stalled past its TTL
	// cannot overwrite its successor's work:
	//   UPDATE invoices SET ..., fence = $2 WHERE id = 42 AND fence < $2
	fmt.Println("fence:", l.Fence)
}

// Teams that run their own migrations print the SQL and apply it with
// their tool; the store then needs no DDL privilege.
func ExampleSchema() {
	sql, err := postgres.Schema(postgres.WithTable("ops", "locks"))
	if err != nil {
		panic(err)
	}
	fmt.Print(sql)
	// Output:
	// CREATE SCHEMA IF NOT EXISTS "ops";
	//
	// -- One row per lock, held until expires_at on the database's clock.
	// -- A released lock's row is deleted; an expired one is taken over in
	// -- place, or deleted by a sweep.
	// CREATE TABLE IF NOT EXISTS "ops"."locks" (
	//     resource   bytea       PRIMARY KEY,
	//     token      bytea       NOT NULL,
	//     expires_at timestamptz NOT NULL,
	//     waited     boolean     NOT NULL DEFAULT false -- notify the release
	// );
	//
	// -- The fences: CACHE 1 (the default) is required, so that fences are
	// -- handed out in the order of the acquisitions across sessions.
	// CREATE SEQUENCE IF NOT EXISTS "ops"."locks_fence" AS bigint CACHE 1;
}
