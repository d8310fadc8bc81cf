package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/storecall"
)

// Store is a lock store on a PostgreSQL database, through a pgx pool. It
// is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	direct bool // run's own path: see run
	config
	names names
	q     queries
	sweep sweeper
	wait  waiting
}

var (
	_ lock.Store             = (*Store)(nil)
	_ lock.Extender          = (*Store)(nil)
	_ lock.TTLReader         = (*Store)(nil)
	_ lock.FenceRaiser       = (*Store)(nil)
	_ lock.Waiter            = (*Store)(nil)
	_ lock.ResourceValidator = (*Store)(nil)
)

// MaxResourceLen is the longest resource name a Store takes, in bytes:
// names are keys of a B-tree index, whose entries must fit in a third of
// a page.
const MaxResourceLen = 2000

// New returns a Store that takes locks in the database pool connects to.
// The caller owns the pool: the store never closes it, and it must stay
// open while the store is used; [Store.Close] ends what the store runs
// of its own before the pool is closed. The table must exist: see
// [Store.Migrate] and [Schema]. Invalid options give an error wrapping
// lock.ErrInvalid.
func New(pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: postgres.New: nil pool", lock.ErrInvalid)
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	cc := pool.Config().ConnConfig
	s := &Store{pool: pool, config: c, names: c.names()}
	s.direct = cc.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement && cc.Tracer == nil
	s.q = newQueries(s.names)
	if s.name == "" {
		s.name = fmt.Sprintf("postgres %s:%d/%s", cc.Host, cc.Port, cc.Database)
	}
	s.sweep.start(c.sweepEvery)
	return s, nil
}

// String returns the store's name.
func (s *Store) String() string { return s.name }

// Close releases what the store keeps besides the pool: it closes the
// connection it listens for releases on (see Waiting in the package
// documentation), ending its goroutine, and cancels the background
// sweep under way, if any; it returns once both have ended, so that the
// pool can be closed next with nothing of the store left running.
// Callers waiting in WaitRelease then return an error wrapping
// lock.ErrClosed, as does every later WaitRelease (the lockers fall back
// to their retry delay), and no background sweep starts again. The other
// calls, Sweep included, go on working through the pool, which Close
// leaves open: the pool is the caller's. Close releases no lock. It may
// be called more than once, and concurrently with other calls; it
// returns nil.
//
// A store that is dropped without Close leaks nothing for long: its
// listening connection closes a second after its last waiting caller
// left, and a background sweep ends within 30 seconds.
func (s *Store) Close() error {
	s.wait.close()
	s.sweep.close()
	return nil
}

// Acquire implements [lock.Store]: one INSERT … ON CONFLICT DO UPDATE,
// which takes over an expired lock in place.
func (s *Store) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	s.maybeSweep()
	o, err := s.run(ctx, &s.q.acquire, args{resource, token, micros(ttl), s.hasWaiters(resource), 4})
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case o.rows == 0:
		return lock.ErrNotAcquired
	}
	return nil
}

// AcquireFenced implements [lock.Fencer]: Acquire's statement, returning
// the next value of the store's sequence. See Fencing in the package
// documentation for why fences increase strictly per resource.
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return 0, err
	}
	s.maybeSweep()
	o, err := s.run(ctx, &s.q.acquireFenced, args{resource, token, micros(ttl), s.hasWaiters(resource), 4})
	switch {
	case err != nil:
		return 0, s.failed(ctx, err)
	case o.rows == 0:
		return 0, lock.ErrNotAcquired
	}
	return uint64(o.n), nil
}

// Release implements [lock.Store]: one DELETE, which notifies the
// release to the waiters if any (see Waiting in the package
// documentation).
func (s *Store) Release(ctx context.Context, resource, token string) error {
	if err := s.check(ctx, resource, token, 1); err != nil {
		return err
	}
	o, err := s.run(ctx, &s.q.release, args{resource: resource, token: token, n: 2})
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case o.rows == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// Extend implements [lock.Extender]: one UPDATE of a live lock's expiry.
func (s *Store) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	o, err := s.run(ctx, &s.q.extend, args{resource: resource, token: token, ttl: micros(ttl), n: 3})
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case o.rows == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// Exists implements [lock.Store].
func (s *Store) Exists(ctx context.Context, resource string) (bool, error) {
	_, held, err := s.TTL(ctx, resource)
	return held, err
}

// TTL implements [lock.TTLReader], to the microsecond, rounded up.
func (s *Store) TTL(ctx context.Context, resource string) (time.Duration, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return 0, false, err
	}
	o, err := s.run(ctx, &s.q.ttl, args{resource: resource, n: 1})
	switch {
	case err != nil:
		return 0, false, s.failed(ctx, err)
	case o.rows == 0:
		return 0, false, nil
	}
	return time.Duration(o.n) * time.Microsecond, true, nil
}

// RaiseFence implements [lock.FenceRaiser]. The store's fences come from
// one sequence for every resource, so it raises the sequence: the next
// fences of every resource of the table are greater than fence. When the
// sequence is already past fence (the usual case) that is one read;
// otherwise one transaction that holds off acquisitions on the table
// (LOCK TABLE … IN SHARE MODE) while it moves the sequence forward, so
// that it never goes back. fence must be below 2^63-1 (math.MaxInt64):
// the next fence must exceed it, and the sequence ends there. A greater
// fence gives an error wrapping lock.ErrInvalid.
func (s *Store) RaiseFence(ctx context.Context, resource string, fence uint64) error {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return err
	}
	if err := storecall.CheckRaise("postgres", fence); err != nil {
		return err
	}
	var last int64
	if err := queryRow(ctx, s.pool, s.q.lastFence, nil, &last); err != nil {
		return s.failed(ctx, err)
	}
	if uint64(last) >= fence {
		return nil
	}
	if _, err := exec(ctx, s.pool, fmt.Sprintf(s.q.raiseFence, fence)); err != nil {
		return s.failed(ctx, err)
	}
	return nil
}

// ValidateResource implements [lock.ResourceValidator]: any name of 1 to
// MaxResourceLen bytes, binary ones included.
func (s *Store) ValidateResource(resource string) error {
	switch {
	case resource == "":
		return fmt.Errorf("%w: empty resource name", lock.ErrInvalid)
	case len(resource) > MaxResourceLen:
		return fmt.Errorf("%w: resource name of %d bytes: the postgres store takes at most %d", lock.ErrInvalid, len(resource), MaxResourceLen)
	}
	return nil
}

// check validates a call's arguments and context before anything is
// sent: the checks every store makes, and this store's limits.
func (s *Store) check(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.ValidateResource(resource); err != nil {
		return err
	}
	if ttl > maxTTL {
		return fmt.Errorf("%w: ttl is %v: want at most %v", lock.ErrInvalid, ttl, maxTTL)
	}
	return storecall.Check(ctx, token, ttl)
}

// maxTTL keeps TTLs in microseconds exact in the float8 that multiplies
// the interval (2^53 µs is 285 years).
const maxTTL = 100 * 365 * 24 * time.Hour

// micros returns ttl in whole microseconds, rounded up.
func micros(ttl time.Duration) int64 {
	return int64((ttl + time.Microsecond - 1) / time.Microsecond)
}

// failed returns the error of a call that got no clear answer, never
// lock.ErrNotAcquired nor lock.ErrNotHeld: the outcome is unknown. A
// missing table gets a hint.
func (s *Store) failed(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("postgres: %s: run Store.Migrate, or apply postgres.Schema: %w", s.names.table, err)
	}
	return storecall.Failed(ctx, err)
}

// maxResends bounds how many times a statement that was never sent is
// sent again: on a pooled connection that the server closed meanwhile
// (after a restart, say), the first write fails before anything left.
const maxResends = 2

func exec(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := pool.Exec(ctx, sql, args...)
	for i := 0; i < maxResends && err != nil && ctx.Err() == nil && pgconn.SafeToRetry(err); i++ {
		tag, err = pool.Exec(ctx, sql, args...)
	}
	return tag, err
}

func queryRow(ctx context.Context, pool *pgxpool.Pool, sql string, args []any, dest ...any) error {
	err := pool.QueryRow(ctx, sql, args...).Scan(dest...)
	for i := 0; i < maxResends && err != nil && ctx.Err() == nil && pgconn.SafeToRetry(err); i++ {
		err = pool.QueryRow(ctx, sql, args...).Scan(dest...)
	}
	return err
}
