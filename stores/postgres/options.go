package postgres

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/storecall"
)

// Option configures a Store, or the SQL of [Schema].
type Option func(*config) error

type config struct {
	name       string
	schema     string // "" leaves the table to the search path
	table      string
	sweepEvery time.Duration
}

// DefaultTable is the name of the locks' table unless WithTable says
// otherwise; its sequence of fences is named after it, with "_fence".
const DefaultTable = "lockkit_locks"

// DefaultSweepInterval is how often a Store deletes expired locks unless
// WithSweepInterval says otherwise.
const DefaultSweepInterval = time.Minute

func newConfig(opts []Option) (config, error) {
	c := config{table: DefaultTable, sweepEvery: DefaultSweepInterval}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// WithTable sets the schema and the name of the locks' table (default
// DefaultTable, found through the connection's search_path). The
// sequence of fences is the table's name followed by "_fence", in the same
// schema. An empty schema leaves the table to the search_path. Names are
// quoted: they keep their case. A name may not hold a NUL byte, which
// PostgreSQL names cannot (pgx would drop it, and so name another table),
// and must be valid UTF-8: the server would refuse every statement naming
// it. A table name is 1 to 57 bytes (the sequence's name adds 6, and
// PostgreSQL keeps 63) and a schema at most 63. Each refusal gives an
// error wrapping lock.ErrInvalid.
func WithTable(schema, table string) Option {
	return func(c *config) error {
		// The sequence's name adds 6 bytes, and names are at most 63.
		if table == "" || len(table) > 57 || len(schema) > 63 {
			return fmt.Errorf("%w: WithTable(%q, %q): want a table name of 1 to 57 bytes and a schema of at most 63", lock.ErrInvalid, schema, table)
		}
		if strings.ContainsRune(schema+table, 0) {
			return fmt.Errorf("%w: WithTable(%q, %q): PostgreSQL names cannot hold a NUL byte", lock.ErrInvalid, schema, table)
		}
		if !utf8.ValidString(schema) || !utf8.ValidString(table) {
			return fmt.Errorf("%w: WithTable(%q, %q): names must be valid UTF-8", lock.ErrInvalid, schema, table)
		}
		c.schema, c.table = schema, table
		return nil
	}
}

// WithName names the store in its String method, and so in the lockers'
// errors, which say which store failed. The default is "postgres"
// followed by the host, port and database the pool connects to.
func WithName(name string) Option {
	return func(c *config) error {
		if err := storecall.CheckName(name); err != nil {
			return err
		}
		c.name = name
		return nil
	}
}

// WithSweepInterval sets how often the store deletes the locks that
// expired without being released (default DefaultSweepInterval): an
// acquisition (Acquire or AcquireFenced, the calls that add rows) made at
// least that long after the last sweep starts one in the background. Zero turns the sweeps off; call [Store.Sweep] yourself then.
func WithSweepInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: WithSweepInterval(%v): want >= 0", lock.ErrInvalid, d)
		}
		c.sweepEvery = d
		return nil
	}
}

// names are the quoted names of the store's objects.
type names struct {
	table    string // the table, quoted and qualified: "s"."t"
	sequence string // the sequence of fences, likewise
	// channel is an SQL expression: the channel of release notifications,
	// named after the table as the server resolves it (its OID), so that
	// every store on one table shares it however WithTable spells it.
	channel string
}

func (c config) names() names {
	ident := func(name string) pgx.Identifier {
		if c.schema == "" {
			return pgx.Identifier{name}
		}
		return pgx.Identifier{c.schema, name}
	}
	table := ident(c.table).Sanitize()
	return names{
		table:    table,
		sequence: ident(c.table + "_fence").Sanitize(),
		channel:  "'lockkit:' || " + quoteLiteral(table) + "::regclass::oid",
	}
}
