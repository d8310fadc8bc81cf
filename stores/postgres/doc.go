// Package postgres is a lock store on PostgreSQL, through a
// [github.com/jackc/pgx/v5/pgxpool] pool: locks for the services that
// already run Postgres, with TTLs, fences and wake-up on release, in one
// table.
//
//	pool, err := pgxpool.New(ctx, "postgres://app@db/app")
//	...
//	store, err := postgres.New(pool)
//	...
//	defer store.Close() // before pool.Close: ends the store's own connection and goroutines
//	if err := store.Migrate(ctx); err != nil { ... } // or apply postgres.Schema() yourself
//	locker, err := lock.NewSingle(store, nil)
//
// The caller owns the pool: the store never closes it. What the store
// runs of its own — the connection its waiters listen on, a background
// sweep — [Store.Close] ends, and waits for, so that the pool can be
// closed next with nothing of the store left running. Requires
// PostgreSQL 10 or later (the tests run on 15).
//
// # Capabilities
//
// Every optional capability of package lock but Granular, which it has no
// use for (TTLs are exact, below), Starter, Queuer (waiters are woken by
// LISTEN/NOTIFY and then acquire), and the counted permits (Permitter and
// PermitWaiter: a lock.Semaphore or lock.RWLocker over Postgres takes
// plain locks on derived names, as on any store without them):
//   - [lock.Extender]: Extend, one UPDATE of a live lock.
//   - [lock.TTLReader]: TTL, to the microsecond.
//   - [lock.HolderReader]: Holder, one SELECT of the holder's token, of
//     which it returns the public part (lock.Options.Holder) and never
//     the secret.
//   - [lock.Fencer] and [lock.FenceRaiser]: AcquireFenced, fences from a
//     sequence, strictly increasing per resource, also across crashes;
//     see Fencing below.
//   - [lock.Waiter]: WaitRelease, woken by LISTEN/NOTIFY on release or by
//     the lock's expiry; see Waiting below.
//   - [lock.ResourceValidator]: any name of 1 to [MaxResourceLen] bytes,
//     binary ones included (names are bytea).
//
// Without Starter, a lock.MultiLocker over Postgres stores runs each call
// in a goroutine. TTLs are kept to the microsecond, rounded up, so the
// store reports no granularity. A TTL may be up to 100 years long; a
// longer one is refused with lock.ErrInvalid before anything is sent.
//
// # When to choose it
//
// When the service already depends on PostgreSQL and not on Redis: the
// locks then live exactly as long as the database does, with no new
// server to run, and they hold across a crash and restart of the
// database. Per lock it costs a committed transaction (a WAL flush)
// where Redis costs a command in memory: choose Redis for tens of
// thousands of locks a second, Postgres for the locks of a service's jobs
// and requests. Unlike advisory locks (pg_advisory_lock), a lock here is
// not tied to a session: it has a TTL, survives the connection that took
// it, and can be extended and fenced.
//
// # Schema
//
// The locks live in one table, [DefaultTable] unless [WithTable] says
// otherwise, with a row per held lock (resource, token, expiry on the
// database's clock, and a flag saying whether anyone waits for it), and
// the fences in a sequence named after it. [Store.Migrate] creates both if
// they are missing; [Schema] prints the same SQL for teams that run their
// own migrations. The table is a regular, logged table: an UNLOGGED one
// would be emptied by a crash.
//
// A released lock's row is deleted by Release. An expired lock's row is
// taken over in place by the next acquisition of the resource, and
// deleted otherwise by a sweep (one DELETE of expired rows, in batches),
// which a store starts in the background, from an acquisition, once every
// [WithSweepInterval] (a minute by default), until [Store.Close];
// [Store.Sweep] runs one at once. So expired rows do not accumulate
// beyond a sweep interval's worth.
//
// # Operations
//
// Each of the operations below is one statement, so one round trip once
// it is prepared on a connection. In pgx's default mode
// (pgx.QueryExecModeCacheStatement) the store prepares each statement
// once per connection, under a name of its own (lockkit_ and a hash of
// its SQL), and sends it with binary arguments through the connection's
// pgconn, without pgx's generic encoding and scanning; a session that
// lost it (DEALLOCATE ALL) prepares it again. With a pooler that cannot
// keep prepared statements, such as PgBouncer before 1.21 in transaction
// mode, set the pool's DefaultQueryExecMode to pgx.QueryExecModeExec: the
// store then goes through pgx's Exec and QueryRow, which honour it (no
// statement needs a session), as it does when the pool has a Tracer, so
// that traces show its statements:
//   - Acquire: INSERT … ON CONFLICT (resource) DO UPDATE … WHERE the
//     existing row has expired;
//   - AcquireFenced: the same, RETURNING nextval of the sequence;
//   - Release: DELETE … WHERE the token matches and the lock is live,
//     with pg_notify in the same statement when the lock is waited for;
//   - Extend: UPDATE … WHERE the token matches and the lock is live;
//   - Exists and TTL: SELECT.
//
// Expiry is decided by the database's clock (clock_timestamp()), never
// by a client's, so clients' clocks do not matter; the lockers count a
// lock's validity from before they sent the request, so a lock is never
// thought valid longer than the database keeps it. A database clock that
// jumps forward expires locks early.
//
// The store makes one attempt per call: it sends a statement again only
// when pgx says it never left (a pooled connection found closed), or when
// the server refused it without running it (a session that lost its
// prepared statement). An
// outcome it cannot be sure of — a connection lost after the statement
// was sent, a canceled context — is returned as an error, never as
// lock.ErrNotAcquired or lock.ErrNotHeld: the lockers then release by
// token. pgx closes the connection of a statement whose context ends
// (unless the pool is configured otherwise); the pool opens another.
// Callers whose deadlines often cut statements short thus keep the pool
// dialing, and the lockers' cleanup releases, bounded by
// lock.Options.StoreTimeout (50ms by default), may each wait for a fresh
// connection and time out, leaving such a lock until its TTL: give those
// lockers a StoreTimeout that covers opening a connection, or configure
// pgx to cancel a statement without closing its connection.
// After a restart of the server, the connections the pool kept are
// dead, and the first calls may meet them (pgxpool pings only a
// connection idle for more than a second before handing it out): such a
// call returns the connection's error (the lockers report
// lock.ErrUnavailable, and Lock tries again), the connection is dropped,
// and the calls work again once the pool has new ones, preparing their
// statements on each.
//
// # Fencing
//
// Fences come from a sequence of the table (CACHE 1, which Migrate
// checks), drawn by nextval in the acquisition's RETURNING clause. That
// clause runs only once the row is the acquirer's — inserted, or locked
// and taken over — and before its transaction commits; the next
// acquisition of the resource can only take the row after that commit,
// and so draws a greater value. Fences are therefore strictly increasing
// per resource (and across resources too, though with gaps), and a
// refused acquisition draws none. They survive a crash: nextval writes
// the sequence to the WAL 32 values ahead, once every 32 values, so the
// record that covers a fence comes before the acquisition's commit
// record, which COMMIT flushes (synchronous_commit on, the default; with
// it off, a crash can lose the last acquisitions and hand their fences
// out again); after a crash the sequence resumes past every value that
// record covers, skipping some, never going back.
//
// A fence costs an acquisition little: the sequence's page for a moment
// and 2 to 3 bytes of WAL on average, under 2% of the server's time in a
// profile of 64 concurrent acquisitions. lock.Options.NoFence saves only that.
// One sequence for every resource does not become a queue either: with 64
// connections on 2 cores, backends wait on buffer locks no more often with
// fences than without, and go to sleep as often per acquisition (the
// package's benchmarks report it as server-sleeps/pair; run them with
// -cpu 8). So the store does not spread fences over several sequences,
// which would cost each session the opening of every one of them.
//
// RaiseFence raises the sequence, and so the fences of every resource of
// the table. It reads the sequence first and does nothing if it is
// already past the fence; otherwise it takes LOCK TABLE … IN SHARE MODE
// for one short transaction, which waits for the acquisitions under way
// and holds off new ones, so that setval never moves the sequence back
// past a value already drawn. It needs no more than the application's
// privileges.
//
// # Waiting
//
// WaitRelease listens (LISTEN) on a channel named after the table as
// the server resolves it (its OID: "lockkit:16384", say), so that stores
// sharing a table share the channel however WithTable spells it — one
// with the schema, one through its search path — and stores on two
// tables of one name in two schemas do not. It listens on one connection per Store taken out
// of the pool while callers wait and closed a second after the last one
// leaves, or at once by [Store.Close] (a connection the pool kept across
// a restart of the server, found dead, is replaced by another); then it
// marks the lock as waited for and reads its TTL and holder, in one
// UPDATE. A Release of a marked lock
// calls pg_notify in its statement, delivered when it commits, with the
// resource, in hex, as payload; unmarked locks cost their releases
// nothing more, which matters because NOTIFY serialises the commits of the
// transactions that send it. Each Store wakes one of its callers per
// notification, the one that has waited longest: one waiter per Store
// rather than every waiter. A notification names the resource, not the
// lock, so the woken caller makes sure, with one SELECT, that the lock it
// found is gone before it returns: a notification that reaches it late,
// of a release that came before it looked (another owner took the
// resource since), or one of another table's lock of the same name,
// leaves it waiting in its place, and the wake goes on to the next
// caller that found another lock. An acquisition by a store whose callers still
// wait marks the new lock at once, so the next release wakes them too.
// Expiry wakes every waiter, through timers armed from the TTL: they race
// for the lock, and the order they waited in is not kept. A notification
// lost with a broken listening connection (a restart of the server, say)
// makes the waiting callers return its error at once, so a missed
// release costs at most the lockers' retry delay; the next WaitRelease
// listens on a new connection. After [Store.Close], WaitRelease returns
// an error wrapping lock.ErrClosed. LISTEN needs a session of its own: through a
// pooler in transaction mode no notification arrives, and waiters wake on
// expiry or at the lockers' retry delay; point the pool at the server, or
// at a pooler in session mode, to have them woken.
//
// # database/sql
//
// The store needs pgx's pool (a pgx.Conn for LISTEN, and its prepared
// statements). An application that uses database/sql with the pgx driver
// (github.com/jackc/pgx/v5/stdlib) opens a small pgxpool with the same
// connection string for its locks — pgxpool.New(ctx, dsn), MaxConns of a
// few connections — next to its *sql.DB. Applications on another driver
// (lib/pq) do the same: the store speaks plain SQL to the same database.
//
// # Replication and failover
//
// Locks and fences hold while the primary lives and keeps its data,
// crashes and restarts included. With asynchronous streaming replication
// (the default), a failover to a standby loses what the standby had not
// received: locks granted in the last moments are forgotten (and can be
// granted again while their holders still work), and fences drawn in
// those moments can be drawn again — a holder with an old fence then
// looks current to a resource that saw the lost one. With synchronous
// replication (synchronous_standby_names, synchronous_commit on or
// remote_apply), an acquisition returns only once a standby has flushed
// it, so a failover to that standby loses neither locks nor fences. Never
// take locks on a read replica: the store writes, so it needs the
// primary (use target_session_attrs=read-write in the connection string
// of a multi-host setup).
package postgres
