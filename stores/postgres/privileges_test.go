package postgres_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockkit/lock/stores/postgres"
)

// An application role with no more than the privileges Schema's doc
// lists (SELECT, INSERT, UPDATE and DELETE on the table; USAGE, SELECT
// and UPDATE on the sequence; USAGE on the schema that WithTable names)
// can make every call of the store: locks, fences raised, waits,
// sweeps and ForceRelease.
func TestDocumentedPrivilegesSuffice(t *testing.T) {
	pool := shared(t)
	ctx := ctxFor(t, 30*time.Second)
	owner := newStore(t, pool)
	role := fmt.Sprintf("app_%d_%d", os.Getpid(), schemas.Add(1))
	ident := pgx.Identifier{role}.Sanitize()
	for _, sql := range []string{
		"CREATE ROLE " + ident + " LOGIN",
		"GRANT USAGE ON SCHEMA " + pgx.Identifier{owner.Schema()}.Sanitize() + " TO " + ident,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON " + owner.Table() + " TO " + ident,
		"GRANT USAGE, SELECT, UPDATE ON SEQUENCE " + owner.Sequence() + " TO " + ident,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	url := strings.Replace(sharedURL(t), "postgres://postgres@", "postgres://"+role+"@", 1)
	s, err := postgres.New(poolOf(t, url), postgres.WithTable(owner.Schema(), "locks"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s as %s = %v; want nil", what, role, err)
		}
	}
	f1, err := s.AcquireFenced(ctx, "r", "a", time.Minute)
	must("AcquireFenced(r, a)", err)
	must("Extend(r, a)", s.Extend(ctx, "r", "a", time.Minute))
	_, _, err = s.TTL(ctx, "r")
	must("TTL(r)", err)
	_, _, err = s.Holder(ctx, "r")
	must("Holder(r)", err)
	waited := make(chan error, 1)
	go func() { waited <- s.WaitRelease(ctx, "r") }()
	eventually(t, "in line", func() bool { return s.Waiting("r") == 1 })
	must("Release(r, a)", s.Release(ctx, "r", "a"))
	must("WaitRelease(r) across Release", <-waited)
	must(fmt.Sprintf("RaiseFence(r, %d)", f1+100), s.RaiseFence(ctx, "r", f1+100))
	if f, err := s.AcquireFenced(ctx, "r", "b", time.Minute); err != nil || f <= f1+100 {
		t.Errorf("AcquireFenced(r, b) after RaiseFence as %s = %d, %v; want a fence above %d", role, f, err, f1+100)
	}
	held, err := s.ForceRelease(ctx, "r")
	must("ForceRelease(r)", err)
	if !held {
		t.Errorf("ForceRelease(r) as %s = false; want true", role)
	}
	must("Acquire(e, c)", s.Acquire(ctx, "e", "c", time.Microsecond))
	eventually(t, "expired", func() bool { h, err := s.Exists(ctx, "e"); return err == nil && !h })
	_, err = s.Sweep(ctx)
	must("Sweep", err)
}
