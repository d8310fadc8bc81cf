package postgres

import (
	"fmt"
	"strings"
)

// queries are the store's statements, for its table.
type queries struct {
	acquire, acquireFenced, release, extend, ttl statement
	holder, forceRelease, wait                   statement
	lastFence, raiseFence                        string // raiseFence: a format taking the fence
	sweep                                        string
}

// live is the condition of a held lock.
const live = "expires_at > clock_timestamp()"

// remaining is a live lock's time to live in microseconds, rounded up and
// at least 1.
const remaining = "greatest(ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000000), 1)::bigint"

// sweepBatch is how many expired locks a sweep deletes per statement.
const sweepBatch = 1000

func newQueries(n names) queries {
	// $1 resource, $2 token, $3 TTL in µs, $4 whether callers of this
	// store wait for the resource (see waiting).
	const upsert = `INSERT INTO %[1]s AS l (resource, token, expires_at, waited)
VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond', $4)
ON CONFLICT (resource) DO UPDATE
SET token = excluded.token, expires_at = excluded.expires_at, waited = excluded.waited
WHERE l.expires_at <= clock_timestamp()`
	acquire := fmt.Sprintf(upsert, n.table)
	// Deletes a live lock, notifying its release if it is waited for.
	const release = `DELETE FROM %s WHERE resource = $1 AND %s %s
RETURNING CASE WHEN waited THEN pg_notify(%s, encode($1, 'hex'))::text END`
	seq := quoteLiteral(n.sequence)
	return queries{
		acquire: newStatement(acquire, noColumn),
		// nextval in RETURNING runs once the row is ours (inserted, or
		// locked and updated), never for a refusal: see Fencing.
		acquireFenced: newStatement(acquire+"\nRETURNING nextval("+seq+"::regclass)", bigintColumn),
		release:       newStatement(fmt.Sprintf(release, n.table, "token = $2 AND", live, n.channel), noColumn),
		forceRelease:  newStatement(fmt.Sprintf(release, n.table, "", live, n.channel), noColumn),
		extend: newStatement(fmt.Sprintf(`UPDATE %s SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
WHERE resource = $1 AND token = $2 AND %s`, n.table, live), noColumn),
		ttl:    newStatement(fmt.Sprintf("SELECT %s FROM %s WHERE resource = $1 AND %s", remaining, n.table, live), bigintColumn),
		holder: newStatement(fmt.Sprintf("SELECT token FROM %s WHERE resource = $1 AND %s", n.table, live), byteaColumn),
		// The lock's remaining TTL, and its token: a caller woken by a
		// notification checks that the lock it found is gone.
		wait: newStatement(fmt.Sprintf("UPDATE %s SET waited = true WHERE resource = $1 AND %s RETURNING %s, token", n.table, live, remaining), bigintByteaColumns),
		// The highest fence handed out, or below it (is_called is false
		// only before the first).
		lastFence: fmt.Sprintf("SELECT last_value - CASE WHEN is_called THEN 0 ELSE 1 END FROM %s", n.sequence),
		// LOCK TABLE waits for the acquisitions under way (an INSERT
		// holds ROW EXCLUSIVE until it commits, and nextval runs only in
		// one) and holds off new ones, so that nothing takes a value
		// between the read of last_value and setval.
		// The names are escaped for the format: a quoted name may hold '%'.
		raiseFence: fmt.Sprintf("BEGIN; LOCK TABLE %s IN SHARE MODE; SELECT setval(%s::regclass, greatest(last_value, %%d)) FROM %s; COMMIT",
			escapeVerbs(n.table), escapeVerbs(seq), escapeVerbs(n.sequence)),
		sweep: fmt.Sprintf(`DELETE FROM %[1]s WHERE ctid = ANY (ARRAY(
SELECT ctid FROM %[1]s WHERE expires_at <= clock_timestamp() LIMIT %[2]d)) AND expires_at <= clock_timestamp()`, n.table, sweepBatch),
	}
}

// escapeVerbs escapes the '%' of s for a format string.
func escapeVerbs(s string) string { return strings.ReplaceAll(s, "%", "%%") }
