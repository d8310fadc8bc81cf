package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/pgtest"
)

// The benchmarks measure lock+unlock pairs on the shared server (fsync
// off: they compare the statements, not the disk), 8 goroutines per
// core (GOMAXPROCS: -cpu 8 on 2 cores gives bench/'s 64) on as many
// connections, each goroutine taking a fresh resource name for every
// pair, through the store, through a lock.SingleLocker, and with the raw
// statements a hand-written lock would send (the floor). bench/ compares
// them side by side. Besides pairs/s, each reports the CPU time a pair
// cost the client (this process) and the server (its processes, from
// /proc on Linux): on a shared machine these vary less than the rate
// does; and how often the server's processes went to sleep per pair
// (voluntary context switches): waiting for the client's next statement,
// about 2 per pair, and for any lock that other sessions hold, so that a
// queue on a lock (the fences' sequence, say) shows as more. It also
// reports the WAL a pair wrote, which does not vary with the machine's
// load: a fence adds to it the sequence's record, once every 32 fences.

const benchParallelism = 8

// benchPool returns a pool with every connection open, so that the
// benchmarks do not measure the start of backend processes.
func benchPool(b *testing.B) *pgxpool.Pool {
	conns := benchParallelism * runtime.GOMAXPROCS(0)
	pool := poolOf(b, sharedURL(b), func(c *pgxpool.Config) {
		c.MaxConns = int32(conns)
		c.ConnConfig.ConnectTimeout = 30 * time.Second
	})
	held := make([]*pgxpool.Conn, conns)
	for i := range held {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		held[i] = c
	}
	for _, c := range held {
		c.Release()
	}
	return pool
}

func BenchmarkRawFloor(b *testing.B) {
	pool := benchPool(b)
	s := newStore(b, pool) // for its table
	ctx := context.Background()
	lockSQL := "INSERT INTO " + s.Table() + " AS l (resource, token, expires_at) VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond') " +
		"ON CONFLICT (resource) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at WHERE l.expires_at <= clock_timestamp()"
	unlockSQL := "DELETE FROM " + s.Table() + " WHERE resource = $1 AND token = $2"
	pairs(b, pool, func(resource, token string) error {
		r, t := []byte(resource), []byte(token)
		tag, err := pool.Exec(ctx, lockSQL, r, t, int64(60e6))
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("lock %q: %d rows; want 1 (not acquired)", resource, tag.RowsAffected())
		}
		if err != nil {
			return err
		}
		tag, err = pool.Exec(ctx, unlockSQL, r, t)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("unlock %q: %d rows; want 1 (not released)", resource, tag.RowsAffected())
		}
		return err
	})
}

func BenchmarkStore(b *testing.B) {
	pool := benchPool(b)
	s := newStore(b, pool)
	ctx := context.Background()
	pairs(b, pool, func(resource, token string) error {
		if err := s.Acquire(ctx, resource, token, time.Minute); err != nil {
			return err
		}
		return s.Release(ctx, resource, token)
	})
}

func BenchmarkStoreFenced(b *testing.B) {
	pool := benchPool(b)
	s := newStore(b, pool)
	ctx := context.Background()
	pairs(b, pool, func(resource, token string) error {
		if _, err := s.AcquireFenced(ctx, resource, token, time.Minute); err != nil {
			return err
		}
		return s.Release(ctx, resource, token)
	})
}

func BenchmarkSingleLocker(b *testing.B) {
	pool := benchPool(b)
	l, err := lock.NewSingle(newStore(b, pool), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	pairs(b, pool, func(resource, _ string) error {
		held, err := l.TryLock(ctx, resource, time.Minute)
		if err != nil {
			return err
		}
		return l.Unlock(ctx, held)
	})
}

func pairs(b *testing.B, pool *pgxpool.Pool, pair func(resource, token string) error) {
	var ids atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	data := pgtest.Shared(b).Data
	client, server, wal := processCPU(), serverUsage(data), walPosition(b, pool)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := strconv.FormatInt(ids.Add(1), 10)
		prefix, token := []byte("bench/"+id+"/"), "token-"+id
		for n := 0; pb.Next(); n++ {
			if err := pair(string(strconv.AppendInt(prefix, int64(n), 10)), token); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64((processCPU()-client).Microseconds())/float64(b.N), "client-µs/pair")
	if server.cpu > 0 {
		used := serverUsage(data)
		b.ReportMetric(float64((used.cpu-server.cpu).Microseconds())/float64(b.N), "server-µs/pair")
		b.ReportMetric(float64(used.sleeps-server.sleeps)/float64(b.N), "server-sleeps/pair")
	}
	b.StopTimer()
	b.ReportMetric(float64(walPosition(b, pool)-wal)/float64(b.N), "WAL-B/pair")
}

// walPosition returns the server's WAL insert position, in bytes. The
// shared server runs nothing else while a benchmark runs, so the WAL
// written between two positions is the benchmark's (and its table's
// autovacuum's).
func walPosition(b *testing.B, pool *pgxpool.Pool) int64 {
	var lsn int64
	if err := pool.QueryRow(context.Background(), "SELECT pg_current_wal_insert_lsn() - '0/0'").Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}

// processCPU returns the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// usage is what the server's processes have used so far.
type usage struct {
	cpu    time.Duration // CPU time, in clock ticks of 10ms
	sleeps int64         // voluntary context switches
}

// serverUsage returns what the server of data directory data has used:
// its postmaster and its children (backends, background workers), from
// /proc; zero without /proc.
func serverUsage(data string) (u usage) {
	pidFile, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return u
	}
	postmaster, _, _ := strings.Cut(string(pidFile), "\n")
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return u
	}
	var ticks int64
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid … utime stime: fields 4, 14 and 15.
		_, rest, ok := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		if !ok || len(f) < 13 || (d.Name() != postmaster && f[1] != postmaster) {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
		status, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "status"))
		for line := range strings.Lines(string(status)) {
			if n, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				v, _ := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
				u.sleeps += v
			}
		}
	}
	u.cpu = time.Duration(ticks) * 10 * time.Millisecond
	return u
}
