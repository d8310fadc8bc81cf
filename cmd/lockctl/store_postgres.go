package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
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
	name := u.name()
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
	addrs := pgAddrs(cfg)
	// The server's default database is the user's name.
	table, database := postgres.DefaultTable, cfg.ConnConfig.Database
	if t, ok := u.param("table"); ok {
		table = t
	}
	if schema, ok := u.param("schema"); ok && schema != "" {
		table = schema + "." + table
	}
	if database == "" {
		database = cfg.ConnConfig.User
	}
	spec := &storeSpec{display: u.display, name: name, kind: "postgres", fences: true, raises: true, servers: serverIDs("postgres", strings.Split(addrs, ",")...),
		record: storeRecord{Kind: "postgres", Servers: strings.Split(addrs, ","), Database: database, Table: table}}
	spec.open = func(ctx context.Context) (*openStore, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("cannot connect to %s: %w", addrs, err)
		}
		ctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout+dialGrace)
		defer cancel()
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("cannot connect to %s: %w", addrs, err)
		}
		s, err := postgres.New(pool, opts...)
		if err == nil && migrate {
			err = s.Migrate(ctx)
		}
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("store %s: %w", name, err)
		}
		return &openStore{Store: s, close: func() { _ = s.Close(); pool.Close() }, forceRelease: s.ForceRelease}, nil
	}
	return spec, nil
}

// pgAddrs lists the servers pgx tries, host:port, for messages: they
// name the store by its URL, or by its name parameter, so say here which
// servers could not be reached.
func pgAddrs(cfg *pgxpool.Config) string {
	addr := func(host string, port uint16) string {
		if strings.HasPrefix(host, "/") { // a Unix socket's directory
			return fmt.Sprintf("%s/.s.PGSQL.%d", host, port)
		}
		return net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	addrs := []string{addr(cfg.ConnConfig.Host, cfg.ConnConfig.Port)}
	for _, f := range cfg.ConnConfig.Fallbacks {
		if a := addr(f.Host, f.Port); !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return strings.Join(addrs, ",")
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
