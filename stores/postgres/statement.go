package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// statement is one of the store's statements that take arguments: its
// SQL, the name it is prepared under on each connection, and the first
// column of its rows, if the store reads it.
type statement struct {
	sql     string
	name    string
	returns column
}

// column is how a statement's first result column is read.
type column int

const (
	noColumn           column = iota // the statement's rows are not read
	bigintColumn                     // a bigint, into outcome.n
	byteaColumn                      // a bytea, copied into outcome.b
	bigintByteaColumns               // a bigint into outcome.n, then a bytea into outcome.b
)

func newStatement(sql string, returns column) statement {
	sum := sha256.Sum256([]byte(sql))
	return statement{sql: sql, name: "lockkit_" + hex.EncodeToString(sum[:16]), returns: returns}
}

// args are a statement's arguments: $1 resource, $2 token, $3 TTL in µs,
// $4 waited; n says how many of them the statement takes.
type args struct {
	resource, token string
	ttl             int64
	waited          bool
	n               int
}

// outcome is what a statement did: how many rows it affected (or
// returned), and the first column of its first row.
type outcome struct {
	rows int64
	n    int64
	b    []byte
}

// binaryFormat is the format code of every parameter and result: one entry
// applies to all.
var binaryFormat = []int16{pgx.BinaryFormatCode}

// run executes st with a on a connection of the pool. In pgx's default
// mode (QueryExecModeCacheStatement) and without a tracer, it prepares
// st once per connection under its name, then sends one Bind and Execute
// with the arguments in binary, and reads the reply without pgx's row
// scanning: the statements are few and their types fixed, so the
// generic path costs the client more than the work itself. Otherwise it
// goes through pgx's Exec and QueryRow, which honour the pool's mode (for
// poolers that cannot keep prepared statements) and its tracer.
//
// Like pgx, it sends a statement again only when the error says it never
// left (a pooled connection found closed); see maxResends.
func (s *Store) run(ctx context.Context, st *statement, a args) (outcome, error) {
	o, err := s.runOnce(ctx, st, a)
	for i := 0; i < maxResends && err != nil && ctx.Err() == nil && pgconn.SafeToRetry(err); i++ {
		o, err = s.runOnce(ctx, st, a)
	}
	return o, err
}

func (s *Store) runOnce(ctx context.Context, st *statement, a args) (outcome, error) {
	if !s.direct {
		return s.runPgx(ctx, st, a)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer c.Release()
	o, err := execPrepared(ctx, c, st, a)
	if err != nil && isStale(err) {
		// The session lost the statement (DEALLOCATE, DISCARD), or its
		// plan no longer fits the table (cached plan must not change
		// result type): the server refused it before running it, so
		// prepare it again and send it once more.
		if err := c.Conn().Deallocate(ctx, st.name); err != nil {
			return outcome{}, err
		}
		o, err = execPrepared(ctx, c, st, a)
	}
	return o, err
}

// isStale reports whether err says that a session lost a prepared
// statement (invalid_sql_statement_name) or that its plan no longer fits
// the table (feature_not_supported: cached plan must not change result
// type).
func isStale(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "26000" || pgErr.Code == "0A000")
}

func execPrepared(ctx context.Context, c *pgxpool.Conn, st *statement, a args) (outcome, error) {
	sd, err := c.Conn().Prepare(ctx, st.name, st.sql)
	if err != nil {
		return outcome{}, err
	}
	var params [4][]byte
	var ttl [8]byte
	binary.BigEndian.PutUint64(ttl[:], uint64(a.ttl))
	waited := []byte{0}
	if a.waited {
		waited[0] = 1
	}
	params[0], params[1], params[2], params[3] = []byte(a.resource), []byte(a.token), ttl[:], waited
	rr := c.Conn().PgConn().ExecStatement(ctx, sd, params[:a.n], binaryFormat, binaryFormat)
	var o outcome
	for first := true; rr.NextRow(); first = false {
		v := rr.Values()
		if !first || st.returns == noColumn || len(v) == 0 || v[0] == nil {
			continue
		}
		switch st.returns {
		case bigintColumn:
			if len(v[0]) == 8 {
				o.n = int64(binary.BigEndian.Uint64(v[0]))
			}
		case byteaColumn:
			o.b = append([]byte(nil), v[0]...)
		case bigintByteaColumns:
			if len(v[0]) == 8 {
				o.n = int64(binary.BigEndian.Uint64(v[0]))
			}
			if len(v) > 1 {
				o.b = append([]byte(nil), v[1]...)
			}
		}
	}
	tag, err := rr.Close()
	o.rows = tag.RowsAffected()
	return o, err
}

// runPgx is run through pgx's Exec and QueryRow.
func (s *Store) runPgx(ctx context.Context, st *statement, a args) (outcome, error) {
	all := []any{[]byte(a.resource), []byte(a.token), a.ttl, a.waited}
	if st.returns == noColumn {
		tag, err := s.pool.Exec(ctx, st.sql, all[:a.n]...)
		return outcome{rows: tag.RowsAffected()}, err
	}
	var o outcome
	dest := []any{&o.n}
	switch st.returns {
	case byteaColumn:
		dest = []any{&o.b}
	case bigintByteaColumns:
		dest = []any{&o.n, &o.b}
	}
	err := s.pool.QueryRow(ctx, st.sql, all[:a.n]...).Scan(dest...)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return o, nil
	case err != nil:
		return o, err
	}
	o.rows = 1
	return o, nil
}
