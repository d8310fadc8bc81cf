package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// The PostgreSQL section: lockkit's store, fenced and not, against a raw
// floor of the same statements a careful hand-written lock would send
// (INSERT … ON CONFLICT DO UPDATE taking over an expired row, DELETE by
// token), each cell in a table of its own, on a server the harness starts
// (initdb in a temporary directory). The server runs with fsync off, as
// the test fixture does: each pair of every library commits two
// transactions, and with fsync on the disk's flush rate would be all a
// cell measured; off, the cells compare what the statements cost.
// cirello.io/pglock is not served by the module proxy, so it is absent.

// postgresGoroutines is the concurrency of the section: a service's
// handlers sharing one pool.
const postgresGoroutines = 64

func postgresLibraries() []library {
	return []library{
		{name: "raw INSERT … ON CONFLICT (floor)", floor: true, open: openRawPostgres},
		{name: "lockkit", open: func(e env) (client, error) { return openLockkitPostgres(e, false) }},
		{name: "lockkit NoFence", open: func(e env) (client, error) { return openLockkitPostgres(e, true) }},
	}
}

// postgresServer holds the pool every cell of the section uses, its
// connections open (a backend process takes milliseconds to start,
// which a cell would otherwise measure), while the section runs.
var postgresServer struct{ pool *pgxpool.Pool }

// postgresSection runs the section's cells into res.
func postgresSection(p plan, res *results, progress func(string, ...any)) {
	srv, err := pgtest.Launch()
	if err != nil {
		progress("postgres: skipped: %v", err)
		return
	}
	defer srv.Close()
	pool, err := openPostgresPool(srv)
	if err != nil {
		progress("postgres: skipped: %v", err)
		return
	}
	defer pool.Close()
	postgresServer.pool = pool
	libs := selected(postgresLibraries())
	for pass := range p.passes {
		order := slices.Clone(libs)
		if pass%2 == 1 {
			slices.Reverse(order)
		}
		for _, lib := range order {
			e := env{prefix: fmt.Sprintf("bench%d", prefixSeq.Add(1)), ttl: p.ttl}
			r := throughput(lib, e, postgresGoroutines, p.throughput, false, postgresLeft)
			progress("postgres, pass %d: %-34s %9.0f pairs/s  %5.1f allocs/pair  errors %d %s", pass+1, lib.name, r.PairsPerSec, r.AllocsPerPair, r.Errors, r.FirstError)
			res.Throughput["postgres"] = append(res.Throughput["postgres"], cellResult{Section: "postgres", Library: lib.name, Floor: lib.floor, Pass: pass + 1, throughputResult: r})
		}
	}
	res.sections["postgres"] = names(libs)
	setRatios(res.Throughput["postgres"])
}

// postgresTargets checks the section's target: lockkit at 0.9× the floor.
func postgresTargets(r *results) []target {
	cells := r.Throughput["postgres"]
	if len(cells) == 0 {
		return nil
	}
	var ts []target
	for _, lib := range []string{"lockkit", "lockkit NoFence"} {
		v := ratioPerPass(cells, lib, "raw INSERT … ON CONFLICT (floor)", func(c cellResult) float64 { return c.PairsPerSec })
		ts = append(ts, target{"PostgreSQL, 64 goroutines (" + lib + ")", "≥ 0.9× raw INSERT … ON CONFLICT", fmt.Sprintf("%.2f×", v), v >= 0.9})
	}
	return ts
}

// openPostgresPool opens the section's pool, every connection open.
func openPostgresPool(srv *pgtest.Server) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(srv.URL(""))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = postgresGoroutines
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	conns := make([]*pgxpool.Conn, 0, postgresGoroutines)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range postgresGoroutines {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			pool.Close()
			return nil, err
		}
		conns = append(conns, c)
	}
	return pool, nil
}

// postgresPool returns the section's pool, shared by the cells (each in a
// table of its own): a client's close leaves it open.
func postgresPool() (*pgxpool.Pool, error) {
	if postgresServer.pool == nil {
		return nil, errors.New("no PostgreSQL server")
	}
	return postgresServer.pool, nil
}

// postgresLeft counts the locks left in a cell's table.
func postgresLeft(table string) (int, int) {
	pool, err := postgresPool()
	if err != nil {
		return -1, -1
	}
	var n int
	q := "SELECT count(*) FROM " + pgx.Identifier{table}.Sanitize() + " WHERE expires_at > clock_timestamp()"
	if err := pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		fmt.Fprintln(os.Stderr, "bench: counting leftovers:", err)
		return -1, -1
	}
	return n, 0
}

func openLockkitPostgres(e env, noFence bool) (client, error) {
	pool, err := postgresPool()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	s, err := postgres.New(pool, postgres.WithTable("", e.prefix))
	if err == nil {
		err = s.Migrate(ctx)
	}
	if err != nil {
		return nil, err
	}
	l, err := lock.NewSingle(s, &lock.Options{NoFence: noFence})
	if err != nil {
		return nil, err
	}
	return lockkitClient(l, e, nil), nil
}

// rawPostgres is the floor: the two statements of a lock with a TTL on
// the database's clock, by hand.
type rawPostgres struct {
	pool               *pgxpool.Pool
	lockSQL, unlockSQL string
	key, token         string
	ttlMicros          int64
}

func openRawPostgres(e env) (client, error) {
	pool, err := postgresPool()
	if err != nil {
		return nil, err
	}
	table := pgx.Identifier{e.prefix}.Sanitize()
	ddl := "CREATE TABLE " + table + " (resource text PRIMARY KEY, token text NOT NULL, expires_at timestamptz NOT NULL)"
	if _, err := pool.Exec(context.Background(), ddl); err != nil {
		return nil, err
	}
	lockSQL := "INSERT INTO " + table + " AS l VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond') " +
		"ON CONFLICT (resource) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at WHERE l.expires_at <= clock_timestamp()"
	unlockSQL := "DELETE FROM " + table + " WHERE resource = $1 AND token = $2"
	return clientFuncs{
		m: func(key string) mutex {
			return &rawPostgres{pool: pool, lockSQL: lockSQL, unlockSQL: unlockSQL, key: key, token: rawToken(), ttlMicros: e.ttl.Microseconds()}
		},
	}, nil
}

func (m *rawPostgres) tryLock(ctx context.Context) (bool, error) {
	tag, err := m.pool.Exec(ctx, m.lockSQL, m.key, m.token, m.ttlMicros)
	return err == nil && tag.RowsAffected() == 1, err
}

func (m *rawPostgres) lock(ctx context.Context) error { return poll(ctx, m.tryLock) }

func (m *rawPostgres) unlock(ctx context.Context) error {
	tag, err := m.pool.Exec(ctx, m.unlockSQL, m.key, m.token)
	if err == nil && tag.RowsAffected() != 1 {
		err = errNotReleased
	}
	return err
}
