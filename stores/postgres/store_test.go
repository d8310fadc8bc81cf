package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/postgres"
)

func TestNewRefusesBadInput(t *testing.T) {
	if _, err := postgres.New(nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New(nil) = %v; want ErrInvalid", err)
	}
	pool := deadPool(t)
	for name, opt := range map[string]postgres.Option{
		"WithTable empty":            postgres.WithTable("s", ""),
		"WithTable too long":         postgres.WithTable("s", strings.Repeat("t", 58)),
		"WithName empty":             postgres.WithName(""),
		"WithSweepInterval -1ns":     postgres.WithSweepInterval(-1),
		"WithTable schema too long":  postgres.WithTable(strings.Repeat("s", 64), "t"),
		"WithTable NUL in table":     postgres.WithTable("s", "lo\x00cks"),
		"WithTable NUL in schema":    postgres.WithTable("s\x00", "locks"),
		"WithTable invalid UTF-8":    postgres.WithTable("", "lo\xffcks"),
		"WithTable schema not UTF-8": postgres.WithTable("s\xc3", "locks"),
	} {
		if _, err := postgres.New(pool, opt); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("New with %s = %v; want ErrInvalid", name, err)
		}
		if _, err := postgres.Schema(opt); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Schema with %s = %v; want ErrInvalid", name, err)
		}
	}
}

// deadPool returns a pool of a port nobody listens on: a call that sent
// anything would fail with a connection error, not ErrInvalid.
func deadPool(t *testing.T) *pgxpool.Pool {
	return poolOf(t, "postgres://u@127.0.0.1:1/db?sslmode=disable&connect_timeout=1")
}

// Bad arguments are refused before anything is sent.
func TestCallsRefuseBadInput(t *testing.T) {
	s, err := postgres.New(deadPool(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	long := strings.Repeat("r", postgres.MaxResourceLen+1)
	var nilCtx context.Context
	for name, err := range map[string]error{
		"Acquire empty resource": s.Acquire(ctx, "", "t", time.Second),
		"Acquire long resource":  s.Acquire(ctx, long, "t", time.Second),
		"Acquire empty token":    s.Acquire(ctx, "r", "", time.Second),
		"Acquire zero TTL":       s.Acquire(ctx, "r", "t", 0),
		"Acquire huge TTL":       s.Acquire(ctx, "r", "t", math.MaxInt64),
		"Acquire nil context":    s.Acquire(nilCtx, "r", "t", time.Second),
		"Release empty token":    s.Release(ctx, "r", ""),
		"Extend negative TTL":    s.Extend(ctx, "r", "t", -time.Second),
		"WaitRelease long":       s.WaitRelease(ctx, long),
		"RaiseFence 2^63-1":      s.RaiseFence(ctx, "r", math.MaxInt64),
		"ValidateResource long":  s.ValidateResource(long),
		"ValidateResource empty": s.ValidateResource(""),
	} {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s = %v; want ErrInvalid", name, err)
		}
	}
	if _, err := s.AcquireFenced(ctx, "r", "t", -1); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("AcquireFenced with a negative TTL = %v; want ErrInvalid", err)
	}
	if _, _, err := s.TTL(ctx, ""); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("TTL of an empty resource = %v; want ErrInvalid", err)
	}
	if err := s.ValidateResource(strings.Repeat("\xff", postgres.MaxResourceLen)); err != nil {
		t.Errorf("ValidateResource of %d binary bytes = %v; want nil", postgres.MaxResourceLen, err)
	}
	// A valid call does reach the (dead) server: an error, not contention.
	if err := s.Acquire(ctx, "r", "t", time.Second); err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Acquire on a dead server = %v; want a connection error", err)
	}
}

// Migrate and Sweep check their context as the lock calls do: a nil one
// is bad input, refused before anything is sent, not a panic in pgx.
func TestAdminCallsRefuseNilContext(t *testing.T) {
	s, err := postgres.New(deadPool(t))
	if err != nil {
		t.Fatal(err)
	}
	var nilCtx context.Context
	if err := s.Migrate(nilCtx); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Migrate(nil) = %v; want ErrInvalid", err)
	}
	if n, err := s.Sweep(nilCtx); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Sweep(nil) = %d, %v; want ErrInvalid", n, err)
	}
	if held, err := s.ForceRelease(nilCtx, "r"); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("ForceRelease(nil, r) = %v, %v; want ErrInvalid", held, err)
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Migrate(ended); !errors.Is(err, context.Canceled) {
		t.Errorf("Migrate(canceled) = %v; want context.Canceled", err)
	}
	if n, err := s.Sweep(ended); !errors.Is(err, context.Canceled) {
		t.Errorf("Sweep(canceled) = %d, %v; want context.Canceled", n, err)
	}
}

func TestSchema(t *testing.T) {
	sql, err := postgres.Schema(postgres.WithTable(`My"App`, "locks"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`CREATE SCHEMA IF NOT EXISTS "My""App";`,
		`CREATE TABLE IF NOT EXISTS "My""App"."locks" (`,
		`CREATE SEQUENCE IF NOT EXISTS "My""App"."locks_fence" AS bigint CACHE 1;`,
	} {
		if !strings.Contains(sql, want) {
			t.Errorf("Schema lacks %q:\n%s", want, sql)
		}
	}
	// The printed SQL is what Migrate runs: applied by hand, the store works.
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	table := postgres.WithTable(fmt.Sprintf("byhand_%d", schemas.Add(1)), "locks")
	sql, _ = postgres.Schema(table)
	if _, err := pool.Exec(ctx, sql); err != nil {
		t.Fatalf("applying Schema by hand: %v", err)
	}
	s, err := postgres.New(pool, table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireFenced(ctx, "r", "t", time.Minute); err != nil {
		t.Fatalf("AcquireFenced on a table made from Schema = %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate over the hand-made table = %v; want nil (IF NOT EXISTS)", err)
	}
}

func TestMigrate(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s, err := postgres.New(pool, freshTable())
	if err != nil {
		t.Fatal(err)
	}
	// Before Migrate: an error that says what to do, never contention.
	err = s.Acquire(ctx, "r", "t", time.Minute)
	if err == nil || errors.Is(err, lock.ErrNotAcquired) || !strings.Contains(err.Error(), "Migrate") {
		t.Fatalf("Acquire before Migrate = %v; want an error naming Migrate", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Migrate(ctx) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent Migrates: %v", err)
	}
	if err := s.Acquire(ctx, "r", "t", time.Minute); err != nil {
		t.Fatalf("Acquire after Migrate = %v", err)
	}
	if _, err := pool.Exec(ctx, "ALTER SEQUENCE "+s.Sequence()+" CACHE 20"); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "CACHE 1") {
		t.Fatalf("Migrate over a sequence caching 20 values = %v; want an error naming CACHE 1", err)
	}
}

// count returns the number of rows of the store's table, live or not.
func count(t *testing.T, pool *pgxpool.Pool, s *postgres.Store) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM "+s.Table()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Released locks leave no row; expired ones are swept.
func TestSweep(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool, postgres.WithSweepInterval(0))
	const ttl = 100 * time.Millisecond
	for i := range 5 {
		if err := s.Acquire(ctx, fmt.Sprint("expiring", i), "t", ttl); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Acquire(ctx, "released", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "released", "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, "live", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, s); n != 6 {
		t.Fatalf("%d rows after 5 expiring locks, one released and one live; want 6", n)
	}
	time.Sleep(ttl + 50*time.Millisecond) // past their expiry on the server's clock
	for held, err := s.Exists(ctx, "expiring0"); held || err != nil; held, err = s.Exists(ctx, "expiring0") {
		time.Sleep(10 * time.Millisecond)
	}
	n, err := s.Sweep(ctx)
	if err != nil || n != 5 {
		t.Fatalf("Sweep = %d, %v; want the 5 expired locks", n, err)
	}
	if n := count(t, pool, s); n != 1 {
		t.Fatalf("%d rows after the sweep; want the live lock's", n)
	}
	if held, err := s.Exists(ctx, "live"); !held || err != nil {
		t.Fatalf("Exists(live) after the sweep = %v, %v; want true", held, err)
	}
}

// A store sweeps on its own, from its calls, once per interval.
func TestSweepsOnItsOwn(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool, postgres.WithSweepInterval(time.Millisecond))
	for i := range 20 {
		if err := s.Acquire(ctx, fmt.Sprint("r", i), "t", time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; count(t, pool, s) > 1; i++ { // the latest lock may not have expired
		if time.Now().After(deadline) {
			t.Fatalf("%d rows of expired locks left 10s on; want them swept", count(t, pool, s))
		}
		time.Sleep(5 * time.Millisecond)
		_ = s.Acquire(ctx, "trigger", fmt.Sprint(i), time.Millisecond) // calls start the sweeps
	}
}

func TestRaiseFence(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	fence := func(r string) uint64 {
		t.Helper()
		f, err := s.AcquireFenced(ctx, r, "t", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, r, "t"); err != nil {
			t.Fatal(err)
		}
		return f
	}
	first := fence("r")
	const high = uint64(1) << 60
	if err := s.RaiseFence(ctx, "r", high); err != nil {
		t.Fatal(err)
	}
	if f := fence("r"); f <= high {
		t.Fatalf("fence after RaiseFence(%d) = %d; want greater", high, f)
	}
	if f := fence("other"); f <= high {
		t.Fatalf("fence of another resource after RaiseFence(%d) = %d; want greater: the sequence serves them all", high, f)
	}
	before := fence("r")
	if err := s.RaiseFence(ctx, "r", first); err != nil {
		t.Fatal(err)
	}
	if f := fence("r"); f != before+1 {
		t.Fatalf("fence after RaiseFence to a lower value = %d; want %d: no change", f, before+1)
	}
}

// RaiseFence works on every table name WithTable takes: a name holding
// '%' (valid in a quoted PostgreSQL name) used to be read as a format verb
// when the fence was put into the statement, which then named another
// relation or was no SQL at all.
func TestRaiseFenceOnANameWithPercent(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	for _, table := range []string{"locks%", "locks%d", "50%_locks"} {
		schema := fmt.Sprintf("t%d_%d", os.Getpid(), schemas.Add(1))
		s := newStore(t, pool, postgres.WithTable(schema, table))
		f, err := s.AcquireFenced(ctx, "r", "t", time.Minute)
		if err != nil {
			t.Fatalf("%q: AcquireFenced: %v", table, err)
		}
		if err := s.Release(ctx, "r", "t"); err != nil {
			t.Fatalf("%q: Release: %v", table, err)
		}
		if err := s.RaiseFence(ctx, "r", f+100); err != nil {
			t.Fatalf("%q: RaiseFence(%d) = %v; want nil", table, f+100, err)
		}
		if g, err := s.AcquireFenced(ctx, "r", "t", time.Minute); err != nil || g <= f+100 {
			t.Fatalf("%q: fence after RaiseFence(%d) = %d, %v; want greater", table, f+100, g, err)
		}
	}
}

// RaiseFence takes every fence below 2^63-1, the sequence's last value:
// the next fence is that value. 2^63-1 itself is refused, as no fence
// could exceed it.
func TestRaiseFenceToTheLastValue(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, shared(t))
	if err := s.RaiseFence(ctx, "r", math.MaxInt64-1); err != nil {
		t.Fatalf("RaiseFence(r, 2^63-2) = %v; want nil", err)
	}
	if f, err := s.AcquireFenced(ctx, "r", "t", time.Minute); err != nil || f != math.MaxInt64 {
		t.Errorf("AcquireFenced(r) after RaiseFence(r, 2^63-2) = %d, %v; want 2^63-1", f, err)
	}
	if err := s.RaiseFence(ctx, "r", math.MaxInt64); !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "2^63-1") {
		t.Errorf("RaiseFence(r, 2^63-1) = %v; want ErrInvalid naming 2^63-1", err)
	}
}

// An acquisition under way holds RaiseFence back until it commits, so
// that the sequence never moves back past a value it drew: without the
// table lock, setval would read the sequence, let the acquisition's
// nextval go past it, and set it back.
func TestRaiseFenceWaitsForAcquisitionsUnderWay(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var drawn int64 // an acquisition under way: its nextval is drawn, not committed
	if err := tx.QueryRow(ctx, "INSERT INTO "+s.Table()+" (resource, token, expires_at) VALUES ('r', 't', clock_timestamp() + interval '1 minute') RETURNING nextval('"+s.Sequence()+"')").Scan(&drawn); err != nil {
		t.Fatal(err)
	}
	raised := make(chan error, 1)
	target := uint64(drawn) + 1 // above the sequence when RaiseFence reads it
	go func() { raised <- s.RaiseFence(ctx, "r", target) }()
	waitingFor := func() bool {
		var n int
		err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE relation = $1::regclass AND mode = 'ShareLock' AND NOT granted", s.Table()).Scan(&n)
		return err == nil && n == 1
	}
	for !waitingFor() {
		select {
		case err := <-raised:
			t.Fatalf("RaiseFence returned (%v) while an acquisition that drew fence %d had not committed; want it to wait", err, drawn)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-raised; err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "r", "t"); err != nil {
		t.Fatal(err)
	}
	f, err := s.AcquireFenced(ctx, "r", "t2", time.Minute)
	if err != nil || f <= target {
		t.Fatalf("AcquireFenced after RaiseFence(%d) = %d, %v; want a fence above it", target, f, err)
	}
}

// Fences follow the order of the grants, fresh row or taken over, under
// contention: each resource's fences, in the order of its grants, only
// increase.
func TestFencesFollowGrants(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 60*time.Second)
	s := newStore(t, pool)
	var mu sync.Mutex
	var grants []uint64 // in the order the holders saw them, one holder at a time
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := fmt.Sprint("w", w)
			for got := 0; got < 10; {
				f, err := s.AcquireFenced(ctx, "r", tok, time.Minute)
				if errors.Is(err, lock.ErrNotAcquired) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock() // inside the lock: one holder appends at a time
				grants = append(grants, f)
				mu.Unlock()
				got++
				if err := s.Release(ctx, "r", tok); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(grants); i++ {
		if grants[i] <= grants[i-1] {
			t.Fatalf("grant %d got fence %d after fence %d", i, grants[i], grants[i-1])
		}
	}
}

// TTLs run on the database's clock, to the microsecond.
func TestTTL(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	if err := s.Acquire(ctx, "r", "t", 90*time.Second+1); err != nil {
		t.Fatal(err)
	}
	left, held, err := s.TTL(ctx, "r")
	if err != nil || !held || left > 90*time.Second+time.Microsecond || left < 80*time.Second {
		t.Fatalf("TTL = %v, %v, %v; want held, just under 90s", left, held, err)
	}
	var expires time.Time
	if err := pool.QueryRow(ctx, "SELECT expires_at FROM "+s.Table()+" WHERE resource = 'r'").Scan(&expires); err != nil {
		t.Fatal(err)
	}
	if err := s.Extend(ctx, "r", "t", time.Hour); err != nil {
		t.Fatal(err)
	}
	if left, _, _ := s.TTL(ctx, "r"); left < 59*time.Minute {
		t.Fatalf("TTL after Extend(1h) = %v", left)
	}
}

// The waiters of a store share one listening connection, and each
// release wakes one of them.
func TestWaitersTakeTurns(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	const waiters = 5
	woken := make(chan error, waiters)
	for range waiters {
		go func() { woken <- s.WaitRelease(ctx, "r") }()
	}
	for turn := range waiters {
		eventually(t, fmt.Sprintf("%d callers in line", waiters-turn), func() bool { return s.Waiting("r") == waiters-turn })
		select {
		case err := <-woken:
			t.Fatalf("turn %d: WaitRelease returned %v while r is held for a minute", turn, err)
		default:
		}
		if n := listeners(t, pool, s); n != 1 {
			t.Fatalf("turn %d: %d listening connections for the waiters of one store; want 1", turn, n)
		}
		if err := s.Release(ctx, "r", "holder"); err != nil {
			t.Fatal(err)
		}
		if err := <-woken; err != nil { // bounded by ctx
			t.Fatalf("turn %d: WaitRelease after Release = %v; want nil", turn, err)
		}
		// The woken caller takes the lock, marked for those still waiting.
		if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the listening connection closed", func() bool { return !s.Listening() && listeners(t, pool, s) == 0 })
}

// listeners counts the sessions listening on the store's channel.
func listeners(t *testing.T, pool *pgxpool.Pool, s *postgres.Store) int {
	t.Helper()
	var n int
	q := "SELECT count(*) FROM pg_stat_activity WHERE query = $1"
	if err := pool.QueryRow(t.Context(), q, "LISTEN "+pgx.Identifier{s.Channel(t)}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A release notifies only a lock that someone waits for: NOTIFY
// serialises the commits of the transactions that send it.
func TestReleaseNotifiesOnlyWaitedLocks(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	channel := pgx.Identifier{s.Channel(t)}.Sanitize()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "UNLISTEN *")
	next := func() string {
		t.Helper()
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n.Payload
	}
	if err := s.Acquire(ctx, "quiet", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "quiet", "t"); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: a marker sent after the
	// release comes first if the release sent none.
	if _, err := pool.Exec(ctx, "SELECT pg_notify($1, 'marker')", s.Channel(t)); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "marker" {
		t.Fatalf("first notification after releasing a lock nobody waited for = %q; want the marker", got)
	}
	if err := s.Acquire(ctx, "waited", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "waited") }()
	eventually(t, "in line", func() bool { return s.Waiting("waited") == 1 })
	if err := s.Release(ctx, "waited", "t"); err != nil {
		t.Fatal(err)
	}
	if got, want := next(), fmt.Sprintf("%x", "waited"); got != want {
		t.Fatalf("notification of the release of a waited lock = %q; want %q", got, want)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A waiter whose ctx ends passes a wake it received on to the next in
// line.
func TestWaitCanceledWaiterPassesWakeOn(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	if err := s.Acquire(ctx, "r", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	first, cancelFirst := context.WithCancel(ctx)
	defer cancelFirst()
	firstDone := make(chan error, 1)
	go func() { firstDone <- s.WaitRelease(first, "r") }()
	eventually(t, "first in line", func() bool { return s.Waiting("r") == 1 })
	secondDone := make(chan error, 1)
	go func() { secondDone <- s.WaitRelease(ctx, "r") }()
	eventually(t, "second in line", func() bool { return s.Waiting("r") == 2 })
	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("first WaitRelease after its ctx was canceled = %v", err)
	}
	if err := s.Release(ctx, "r", "holder"); err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil { // bounded by ctx
		t.Fatalf("second WaitRelease = %v", err)
	}
}

// A lock extended while waited for keeps the waiter waiting until the
// extended TTL runs out.
func TestWaitRechecksOnExpiry(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	if err := s.Acquire(ctx, "r", "holder", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(ctx, "r") }()
	if err := s.Extend(ctx, "r", "holder", 700*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitRelease = %v", err)
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Fatalf("Exists(r) when WaitRelease returned = %v, %v; want false: it returned while the extended lock was held", held, err)
	}
}

// eventually polls cond every 5ms for at most 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStatementLostBySession: a session that lost the store's prepared
// statements (DEALLOCATE ALL, as a pooler's reset may send) prepares
// them again, and the calls succeed.
func TestStatementLostBySession(t *testing.T) {
	pool := poolOf(t, sharedURL(t), func(c *pgxpool.Config) { c.MaxConns = 1 })
	s := newStore(t, pool)
	ctx := ctxFor(t, time.Minute)
	for i := range 2 {
		if err := s.Acquire(ctx, "r", "t", time.Minute); err != nil {
			t.Fatalf("Acquire(r) #%d = %v; want nil", i+1, err)
		}
		if err := s.Release(ctx, "r", "t"); err != nil {
			t.Fatalf("Release(r) #%d = %v; want nil", i+1, err)
		}
		// Through the simple protocol, which pgx does not track: its
		// connection still thinks the statements are prepared.
		if _, err := pool.Exec(ctx, "DEALLOCATE ALL", pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	if held, err := s.Exists(ctx, "r"); err != nil || held {
		t.Fatalf("Exists(r) after Release = %v, %v; want false, nil", held, err)
	}
}

// queryCounter is a pgx.QueryTracer that counts the queries it sees.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestTracerSeesStatements: on a pool with a tracer, the store's
// statements go through pgx, so that the tracer sees them.
func TestTracerSeesStatements(t *testing.T) {
	tracer := &queryCounter{}
	pool := poolOf(t, sharedURL(t), func(c *pgxpool.Config) { c.ConnConfig.Tracer = tracer })
	s := newStore(t, pool)
	ctx := ctxFor(t, time.Minute)
	before := tracer.n.Load()
	if _, err := s.AcquireFenced(ctx, "r", "t", time.Minute); err != nil {
		t.Fatalf("AcquireFenced(r) = %v; want nil", err)
	}
	if err := s.Release(ctx, "r", "t"); err != nil {
		t.Fatalf("Release(r) = %v; want nil", err)
	}
	if got := tracer.n.Load() - before; got != 2 {
		t.Errorf("the tracer saw %d queries of AcquireFenced and Release; want 2", got)
	}
}

// The longest TTL the package doc allows, 100 years, is taken and kept
// to the microsecond; a nanosecond more is refused before anything is
// sent.
func TestLongestTTL(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, shared(t))
	const longest = 100 * 365 * 24 * time.Hour
	if err := s.Acquire(ctx, "r", "t", longest+time.Nanosecond); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Acquire(r, t, 100y+1ns) = %v; want ErrInvalid", err)
	}
	if err := s.Acquire(ctx, "r", "t", longest); err != nil {
		t.Fatalf("Acquire(r, t, 100y) = %v; want nil", err)
	}
	if ttl, held, err := s.TTL(ctx, "r"); err != nil || !held || ttl > longest || ttl < longest-time.Hour {
		t.Errorf("TTL(r) of a 100-year lock = %v, %v, %v; want about 100 years, held", ttl, held, err)
	}
	if err := s.Extend(ctx, "r", "t", longest+time.Nanosecond); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Extend(r, t, 100y+1ns) = %v; want ErrInvalid", err)
	}
}
