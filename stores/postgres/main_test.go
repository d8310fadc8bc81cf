package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.CloseShared()
	os.Exit(code)
}

// poolOf returns a pool of url's database, closed when t ends.
func poolOf(t testing.TB, url string, adjust ...func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = 10 * time.Second // generous: the machine may be loaded
	for _, f := range adjust {
		f(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var sharedPool struct {
	pool *pgxpool.Pool
}

// sharedURL returns the URL of the shared server's database.
func sharedURL(t testing.TB) string { return pgtest.Shared(t).URL("") }

// shared returns a pool of the shared server, for the package's tests.
func shared(t testing.TB) *pgxpool.Pool {
	t.Helper()
	srv := pgtest.Shared(t)
	if sharedPool.pool == nil {
		cfg, err := pgxpool.ParseConfig(srv.URL(""))
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = 32
		if sharedPool.pool, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	return sharedPool.pool
}

var schemas atomic.Int64

// freshTable returns the option of a table in a schema no other store of
// the test binary uses.
func freshTable() postgres.Option {
	return postgres.WithTable(fmt.Sprintf("t%d_%d", os.Getpid(), schemas.Add(1)), "locks")
}

// newStore returns a migrated store on pool, in a schema of its own.
func newStore(t testing.TB, pool *pgxpool.Pool, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.New(pool, append([]postgres.Option{freshTable()}, opts...)...)
	if err != nil {
		t.Fatalf("postgres.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
