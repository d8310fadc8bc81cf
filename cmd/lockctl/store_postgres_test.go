package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// The end-to-end tests run against a PostgreSQL server too, each in a
// table of its own that lockctl creates (migrate=true).
func init() {
	backends = append(backends, struct {
		name  string
		start func(t *testing.T) backend
	}{"postgres", func(t *testing.T) backend {
		srv := pgtest.Start(t)
		schema := fmt.Sprintf("lockctl%d", pgSchemas.Add(1))
		url := srv.URL("") + "&schema=" + schema + "&migrate=true"
		return backend{name: "postgres", urls: []string{url}, ttls: true,
			locker: func(t *testing.T) lock.Locker {
				pool, err := pgxpool.New(context.Background(), srv.URL(""))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				s, err := postgres.New(pool, postgres.WithTable(schema, postgres.DefaultTable))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Migrate(t.Context()); err != nil {
					t.Fatal(err)
				}
				return single(t, s)
			}}
	}})
}

var pgSchemas atomic.Int64

func TestParsePostgresURLs(t *testing.T) {
	for _, tc := range []struct{ url, display, pgx string }{
		{"postgres://app:s3cret@db:5432/app?sslmode=disable&table=locks&schema=ops",
			"postgres://app:xxxxx@db:5432/app?sslmode=disable&table=locks&schema=ops",
			"postgres://app:s3cret@db:5432/app?sslmode=disable"},
		{"postgresql://db1,db2/app?target_session_attrs=read-write&name=jobs",
			"postgresql://db1,db2/app?target_session_attrs=read-write&name=jobs",
			"postgresql://db1,db2/app?target_session_attrs=read-write"},
		{"postgres://db/app?migrate", "postgres://db/app?migrate", "postgres://db/app"},
	} {
		spec, err := parseStore(tc.url)
		if err != nil {
			t.Errorf("parseStore(%q) = %v", tc.url, err)
			continue
		}
		if spec.kind != "postgres" || spec.display != tc.display || !spec.fences {
			t.Errorf("parseStore(%q) = kind %q, display %q, fences %v; want postgres, %q, true", tc.url, spec.kind, spec.display, spec.fences, tc.display)
		}
		if got := pgxURL(tc.url); got != tc.pgx {
			t.Errorf("pgxURL(%q) = %q; want %q", tc.url, got, tc.pgx)
		}
	}
	for _, bad := range []string{
		"postgres://app:s3cret@db/app?table=" + strings.Repeat("t", 60),
		"postgres://app:s3cret@db/app?migrate=maybe",
		"postgres://app:s3cret@db/app?table=a&table=b",
		"postgres://app:s3cret@db:notaport/app",
	} {
		_, err := parseStore(bad)
		var ue *urlError
		if !errors.As(err, &ue) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("parseStore(%q) = %v; want a URL error that hides the password", bad, err)
		}
	}
}
