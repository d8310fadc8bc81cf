package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock/stores/postgres"
)

// postgres://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...][/DATABASE][?PARAMS]
// postgresql://... (the same)
//
// lockctl's own parameters — table, schema, name, migrate — are taken out;
// the URL with the others (sslmode, connect_timeout, application_name,
// target_session_attrs...) goes to pgx, which reads it as libpq would.

var postgresParams = []string{"table", "schema", "name", "migrate"}

func init() {
	schemes["postgres"] = parsePostgres
	schemes["postgresql"] = parsePostgres
}

func parsePostgres(u *storeURL) (*storeSpec, error) {
	for name, values := range u.query {
		if len(values) > 1 {
			return nil, u.bad("query parameter "+name, "given %d times", len(values))
		}
	}
	cfg, err := pgxpool.ParseConfig(pgxURL(u.raw))
	if err != nil {
		msg := err.Error()
		if u.password != "" {
			msg = strings.ReplaceAll(msg, u.password, "xxxxx")
		}
		return nil, u.bad("URL", "%s", msg)
	}
	cfg.MaxConns = 4
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "lockctl"
	}
	name := u.display
	if n, ok := u.param("name"); ok && n != "" {
		name = n
	}
	opts := []postgres.Option{postgres.WithName(name)}
	if table, ok := u.param("table"); ok {
		schema, _ := u.param("schema")
		opts = append(opts, postgres.WithTable(schema, table))
	} else if schema, ok := u.param("schema"); ok {
		opts = append(opts, postgres.WithTable(schema, postgres.DefaultTable))
	}
	migrate, err := u.boolParam("migrate")
	if err != nil {
		return nil, err
	}
	if _, err := postgres.Schema(opts...); err != nil { // check the options now
		return nil, u.bad("query parameters table and schema", "%v", err)
	}
	spec := &storeSpec{display: u.display, name: name, kind: "postgres", fences: true}
	spec.open = func(ctx context.Context) (*openStore, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("cannot connect to %s: %w", u.display, err)
		}
		ctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout+dialGrace)
		defer cancel()
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("cannot connect to %s: %w", u.display, err)
		}
		s, err := postgres.New(pool, opts...)
		if err == nil && migrate {
			err = s.Migrate(ctx)
		}
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("store %s: %w", u.display, err)
		}
		return &openStore{Store: s, close: pool.Close, forceRelease: s.ForceRelease}, nil
	}
	return spec, nil
}

// dialGrace bounds the first connection beyond the URL's connect_timeout
// (none by default).
const dialGrace = 5 * time.Second

// pgxURL returns raw without lockctl's own query parameters.
func pgxURL(raw string) string {
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		return raw
	}
	var keep []string
	for _, pair := range strings.Split(query, "&") {
		name, _, _ := strings.Cut(pair, "=")
		if pair != "" && !slices.Contains(postgresParams, name) {
			keep = append(keep, pair)
		}
	}
	if len(keep) == 0 {
		return base
	}
	return base + "?" + strings.Join(keep, "&")
}
