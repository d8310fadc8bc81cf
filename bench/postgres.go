package main

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// The PostgreSQL section: lockkit's store, fenced and not, against a raw
// floor of the same statements a careful hand-written lock would send
// (INSERT … ON CONFLICT DO UPDATE taking over an expired row, DELETE by
// token), through pgx's Exec as an application would (the store prepares
// its statements and binds binary arguments through pgconn, which costs
// the client less: a cell above 1.00× is that, not a weaker floor),
// each cell in a table of its own, on a server the harness starts
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

// postgres runs the section's cells, on a server it starts; without
// PostgreSQL it skips them, unless servers are required.
func (r *runner) postgres() error {
	srv, err := pgtest.Launch()
	if err != nil {
		return r.skip("postgres", err)
	}
	defer srv.Close()
	pool, err := openPostgresPool(srv)
	if err != nil {
		return err
	}
	defer pool.Close()
	postgresServer.pool = pool
	defer func() { postgresServer.pool = nil }()
	if err := pool.QueryRow(context.Background(), "SHOW server_version").Scan(&r.res.Machine.Postgres); err != nil {
		return err
	}
	sp := spec{key: "postgres", title: "PostgreSQL (fsync off): 64 goroutines sharing one pool, TryLock+Unlock pairs", kind: kindThroughput,
		libs: postgresLibraries(), workers: postgresGoroutines, count: postgresLeftovers}
	r.warmUp(sp)
	r.throughput(sp)
	return nil
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

// postgresLeftovers counts the rows left in a cell's table: live locks,
// and rows of released or expired ones (per-resource state).
func postgresLeftovers(e env) (l leftovers) {
	pool, err := postgresPool()
	if err != nil {
		l.failed(err)
		return l
	}
	q := "SELECT count(*) FILTER (WHERE expires_at > clock_timestamp()), count(*) FROM " + pgx.Identifier{e.table}.Sanitize()
	var all int
	l.failed(pool.QueryRow(context.Background(), q).Scan(&l.Locks, &all))
	l.PerResource = all - l.Locks
	return l
}

func openLockkitPostgres(e env, noFence bool) (client, error) {
	pool, err := postgresPool()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	s, err := postgres.New(pool, postgres.WithTable("", e.table))
	if err == nil {
		err = s.Migrate(ctx)
	}
	if err == nil {
		err = warmConnections(pool, func(ctx context.Context) error {
			name, token := e.prefix+"warm-up", "warm-up"
			var err error
			if noFence {
				err = s.Acquire(ctx, name, token, e.ttl)
			} else {
				_, err = s.AcquireFenced(ctx, name, token, e.ttl)
			}
			if err == nil {
				err = s.Release(ctx, name, token)
			}
			return err
		})
	}
	return singleClient(s, err, e, e.options(noFence, nil), nil)
}

// warmConnections runs pair once on every connection of pool, so that a
// cell does not measure the first use of its table on each: a session
// prepares the cell's statements and loads its table, index and
// sequence into its caches (about a millisecond). The harness's warm-up,
// one pair per worker in turn, finds the pool's last released connection
// idle every time (the pool hands out the most recently released one)
// and so warms one connection of 64. Holding every other connection, it
// leaves pair one idle connection to run on.
func warmConnections(pool *pgxpool.Pool, pair func(context.Context) error) error {
	ctx := context.Background()
	conns := make([]*pgxpool.Conn, 0, pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Release()
			}
		}
	}()
	for range cap(conns) {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	for i := range conns {
		conns[i].Release() // the only idle connection: pair runs on it
		conns[i] = nil
		if err := pair(ctx); err != nil {
			return err
		}
		c, err := pool.Acquire(ctx) // the same one again
		if err != nil {
			return err
		}
		conns[i] = c
	}
	return nil
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
	table := pgx.Identifier{e.table}.Sanitize()
	ddl := "CREATE TABLE " + table + " (resource text PRIMARY KEY, token text NOT NULL, expires_at timestamptz NOT NULL)"
	if _, err := pool.Exec(context.Background(), ddl); err != nil {
		return nil, err
	}
	lockSQL := "INSERT INTO " + table + " AS l VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond') " +
		"ON CONFLICT (resource) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at WHERE l.expires_at <= clock_timestamp()"
	unlockSQL := "DELETE FROM " + table + " WHERE resource = $1 AND token = $2"
	err = warmConnections(pool, func(ctx context.Context) error {
		name, token := e.prefix+"warm-up", "warm-up"
		if _, err := pool.Exec(ctx, lockSQL, name, token, e.ttl.Microseconds()); err != nil {
			return err
		}
		_, err := pool.Exec(ctx, unlockSQL, name, token)
		return err
	})
	if err != nil {
		return nil, err
	}
	return clientFuncs{
		w: func() worker {
			return &rawPostgres{pool: pool, lockSQL: lockSQL, unlockSQL: unlockSQL, token: rawToken(), ttlMicros: e.ttl.Microseconds()}
		},
	}, nil
}

func (m *rawPostgres) tryLock(ctx context.Context, name string) (bool, error) {
	m.key = name
	tag, err := m.pool.Exec(ctx, m.lockSQL, name, m.token, m.ttlMicros)
	return err == nil && tag.RowsAffected() == 1, err
}

func (m *rawPostgres) lock(ctx context.Context, name string) error {
	return poll(ctx, time.Millisecond, func() (bool, error) { return m.tryLock(ctx, name) })
}

func (m *rawPostgres) unlock(ctx context.Context) error {
	tag, err := m.pool.Exec(ctx, m.unlockSQL, m.key, m.token)
	if err == nil && tag.RowsAffected() != 1 {
		err = errNotReleased
	}
	return err
}
