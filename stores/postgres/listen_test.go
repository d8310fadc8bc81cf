package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock/stores/postgres"
)

// A listening connection that breaks may have lost a notification: the
// callers waiting on it return its error at once, as the package doc
// says, rather than nil (which would say the lock was released) or
// waiting on for the lock's expiry. The next WaitRelease listens on a new
// connection and is woken by a release.
func TestWaitersGetTheErrorOfABrokenListener(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	s := newStore(t, pool)
	if err := s.Acquire(ctx, "r", "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 2)
	for range 2 {
		go func() { waited <- s.WaitRelease(ctx, "r") }()
	}
	eventually(t, "two in line", func() bool { return s.Waiting("r") == 2 })
	var killed int
	q := "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1"
	if err := pool.QueryRow(ctx, q, "LISTEN "+pgx.Identifier{s.Channel(t)}.Sanitize()).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d listening sessions; want 1", killed)
	}
	for i := range 2 {
		if err := <-waited; err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WaitRelease(r) #%d as its listening connection broke = %v; want the connection's error", i+1, err)
		}
	}
	go func() { waited <- s.WaitRelease(ctx, "r") }()
	eventually(t, "in line again", func() bool { return s.Waiting("r") == 1 })
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Errorf("WaitRelease(r) on a new listening connection, across Release = %v; want nil", err)
	}
}

// Tables whose schema and name, joined by a dot, read alike ("a.b"."c"
// and "a"."b.c") have release channels of their own: otherwise a release
// in one would wake the waiters of the other's lock of the same name.
func TestTablesHaveChannelsOfTheirOwn(t *testing.T) {
	pool := shared(t)
	base := fmt.Sprintf("c%d_%d", os.Getpid(), schemas.Add(1))
	seen := map[string]string{}
	for _, o := range [][2]string{{base + ".b", "c"}, {base, "b.c"}, {base, "c"}} {
		s := newStore(t, pool, postgres.WithTable(o[0], o[1]))
		if other, ok := seen[s.Channel(t)]; ok {
			t.Errorf("tables %s and %s share the channel %q; want one each", other, s.Table(), s.Channel(t))
		}
		seen[s.Channel(t)] = s.Table()
	}
}

// Stores that spell one table differently — one with its schema, one
// through the search path — share its release channel: a release through
// one wakes the waiters of the other, rather than leaving them to the
// lock's expiry.
func TestSpellingsOfATableShareItsChannel(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	schema := fmt.Sprintf("s%d_%d", os.Getpid(), schemas.Add(1))
	qualified := newStore(t, shared(t), postgres.WithTable(schema, "locks"))
	onPath := poolOf(t, sharedURL(t), func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	})
	bare, err := postgres.New(onPath, postgres.WithTable("", "locks"))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if a, b := qualified.Channel(t), bare.Channel(t); a != b {
		t.Errorf("the channels of %s and of %s through its search path = %q and %q; want one", qualified.Table(), bare.Table(), a, b)
	}
	if err := qualified.Acquire(ctx, "r", "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- bare.WaitRelease(ctx, "r") }()
	eventually(t, "in line", func() bool { return bare.Waiting("r") == 1 })
	if err := qualified.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	// The lock was taken for an hour: only the release's notification
	// ends the wait before ctx does.
	if err := <-waited; err != nil {
		t.Errorf("WaitRelease(r) through %s across Release(r) through %s = %v; want nil", bare.Table(), qualified.Table(), err)
	}
}
