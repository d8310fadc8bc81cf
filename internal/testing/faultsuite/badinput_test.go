package faultsuite_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memcache"
	"github.com/lockkit/lock/stores/redis"
)

// lockCommands counts the commands a Redis server has run that a lock
// store sends (not the admin and monitoring ones).
func lockCommands(n node) (int64, error) {
	info, err := n.do("INFO", "commandstats").ToString()
	if err != nil {
		return 0, err
	}
	total := int64(0)
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		switch strings.TrimPrefix(name, "cmdstat_") {
		case "info", "ping", "hello", "client|setinfo", "client|tracking", "role", "scan", "dbsize", "config|resetstat", "command|docs":
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		total += n
	}
	return total, nil
}

// badInputBackend is a backend of the bad-input table, with the means to
// count what reached its servers.
type badInputBackend struct {
	*backend
	redis    bool // has a Redis store (refuses names over redis.MaxResourceLen)
	memcache bool // has a memcached store (one-second granularity)
	sent     func() int64
}

func (s *scenario) badInputBackend(name string, nRedis, nMemcache int) badInputBackend {
	var rs []*redistest.Server
	var ms []*memcachetest.Server
	if nRedis > 0 {
		rs = s.redisServers(nRedis)
	}
	if nMemcache > 0 {
		ms = s.memcacheServers(nMemcache, nil)
	}
	var b *backend
	switch {
	case nMemcache == 0:
		b, _ = s.redisBackend(name, rs)
	case nRedis == 0:
		b, _ = s.memcacheBackend(name, ms)
	default:
		b = s.mixedBackend(rs, ms)
		b.name = name
	}
	if b.opts.StoreTimeout > 0 {
		// This scenario checks what is refused and what works, not
		// latency: a loaded machine under -race once took over 200ms to
		// answer a Redlock over memcached with a huge, hashed name.
		b.opts.StoreTimeout = 5 * time.Second
	}
	obs := s.nodes(rs)
	return badInputBackend{
		backend: b, redis: nRedis > 0, memcache: nMemcache > 0,
		sent: func() int64 {
			total := int64(0)
			for _, o := range obs {
				n, err := lockCommands(o)
				if err != nil {
					s.t.Fatal(err)
				}
				total += n
			}
			for _, srv := range ms {
				n, err := memcacheCommands(srv)
				if err != nil {
					s.t.Fatal(err)
				}
				total += n
			}
			return total
		},
	}
}

// badInput is a row of the table: a call with bad input and the error it
// must return.
type badInput struct {
	name string
	// call makes the call with a fresh locker of the backend.
	call func(ctx context.Context, b badInputBackend, l lock.Locker) error
	want error // errors.Is target; nil: the call must succeed
	// sends: the call needs the stores to answer (an Unlock cannot know
	// that a lock was already released without asking), so it is not
	// expected to send nothing.
	sends bool
	// applies selects the backends; nil: all.
	applies func(b badInputBackend) bool
}

// The API's bad inputs, on every kind of store: each returns an error
// matching the documented sentinel, sends nothing to any store (checked
// on the servers' own command counters), and leaves nothing locked.
// Inputs that look bad but that a store handles — binary and huge names on
// memcached (hashed keys), TTLs over 30 days on memcached (sent as an
// absolute time) — must work, and leave nothing locked either. The root
// package's tests cover the same checks on in-process stores.
func TestBadInput(t *testing.T) {
	var nilCtx context.Context
	huge := strings.Repeat("h", 1<<20)
	binary := "\x00\xff{a}%7D bin\r\n\x7f"
	ok := func(ctx context.Context, l lock.Locker, resource string, ttl time.Duration) error {
		held, err := l.TryLock(ctx, resource, ttl)
		if err != nil {
			return err
		}
		return l.Unlock(ctx, held)
	}
	rows := []badInput{
		{name: "empty resource", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.Lock(ctx, "", time.Second)
				return err
			}},
		{name: "empty resource (IsLocked)", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.IsLocked(ctx, "")
				return err
			}},
		{name: "huge resource name refused by Redis", want: lock.ErrInvalid,
			applies: func(b badInputBackend) bool { return b.redis },
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.TryLock(ctx, strings.Repeat("h", redis.MaxResourceLen+1), time.Second)
				return err
			}},
		{name: "huge resource name hashed by memcached", sends: true,
			applies: func(b badInputBackend) bool { return !b.redis },
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				return ok(ctx, l, huge, 3*time.Second)
			}},
		{name: "binary resource name", sends: true,
			call: func(ctx context.Context, b badInputBackend, l lock.Locker) error {
				return ok(ctx, l, binary, 3*time.Second)
			}},
		{name: "zero TTL", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.Lock(ctx, "r", 0)
				return err
			}},
		{name: "negative TTL", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.TryLock(ctx, "r", -time.Second)
				return err
			}},
		{name: "TTL over MaxTTL", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.TryLock(ctx, "r", lock.MaxTTL+time.Second)
				return err
			}},
		{name: "overflowing TTL", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.TryLock(ctx, "r", time.Duration(1<<63-1))
				return err
			}},
		{name: "TTL below the drift allowance", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.TryLock(ctx, "r", time.Millisecond)
				return err
			}},
		{name: "TTL below memcached's granularity", want: lock.ErrInvalid,
			applies: func(b badInputBackend) bool { return b.memcache },
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.TryLock(ctx, "r", time.Second)
				return err
			}},
		{name: "memcached TTL over 30 days (absolute time)", sends: true,
			applies: func(b badInputBackend) bool { return b.memcache },
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				return ok(ctx, l, "month", 31*24*time.Hour)
			}},
		{name: "extend with a bad TTL", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.Extend(ctx, lock.Lock{Resource: "r", Token: "t", ValidUntil: time.Now().Add(time.Second)}, -1)
				return err
			}},
		{name: "invalid retry option", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.Lock(ctx, "r", 3*time.Second, lock.WithRetry(lock.Retry{Attempts: 2}))
				return err
			}},
		{name: "nil context (Lock)", want: lock.ErrInvalid,
			call: func(context.Context, badInputBackend, lock.Locker) error { return nil }},
		{name: "zero Lock (Unlock)", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error { return l.Unlock(ctx, lock.Lock{}) }},
		{name: "zero Lock (Extend)", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				_, err := l.Extend(ctx, lock.Lock{}, time.Second)
				return err
			}},
		{name: "Run without a function", want: lock.ErrInvalid,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				return lock.Run(ctx, l, "r", 3*time.Second, nil)
			}},
		{name: "double unlock", want: lock.ErrNotHeld, sends: true,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				held, err := l.TryLock(ctx, "double", 3*time.Second)
				if err != nil {
					return err
				}
				if err := l.Unlock(ctx, held); err != nil {
					return err
				}
				return l.Unlock(ctx, held)
			}},
		{name: "extend after unlock", want: lock.ErrNotHeld, sends: true,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				held, err := l.TryLock(ctx, "extend-after", 3*time.Second)
				if err != nil {
					return err
				}
				if err := l.Unlock(ctx, held); err != nil {
					return err
				}
				_, err = l.Extend(ctx, held, 3*time.Second)
				return err
			}},
		{name: "unlock and extend after expiry", want: lock.ErrNotHeld, sends: true,
			call: func(ctx context.Context, b badInputBackend, l lock.Locker) error {
				ttl := 100 * time.Millisecond
				if b.memcache {
					ttl = 1100 * time.Millisecond // just above one second of granularity and the drift
				}
				held, err := l.TryLock(ctx, "expired", ttl)
				if err != nil {
					return err
				}
				time.Sleep(ttl + time.Second) // memcached's clock ticks once a second
				if _, err := l.Extend(ctx, held, 3*time.Second); !errors.Is(err, lock.ErrNotHeld) {
					return fmt.Errorf("Extend after expiry = %w; want ErrNotHeld", err)
				}
				return l.Unlock(ctx, held)
			}},
		{name: "closed locker", want: lock.ErrClosed,
			call: func(ctx context.Context, _ badInputBackend, l lock.Locker) error {
				if err := l.Shutdown(ctx); err != nil {
					return err
				}
				_, err := l.TryLock(ctx, "r", 3*time.Second)
				return err
			}},
	}
	// The nil-context row calls every method.
	for i := range rows {
		if rows[i].name == "nil context (Lock)" {
			rows[i].name = "nil context"
			rows[i].call = func(_ context.Context, _ badInputBackend, l lock.Locker) error {
				var errs []error
				_, err := l.Lock(nilCtx, "r", 3*time.Second)
				errs = append(errs, err)
				_, err = l.TryLock(nilCtx, "r", 3*time.Second)
				errs = append(errs, err)
				_, err = l.IsLocked(nilCtx, "r")
				errs = append(errs, err)
				held := lock.Lock{Resource: "r", Token: "t", ValidUntil: time.Now().Add(time.Second)}
				errs = append(errs, l.Unlock(nilCtx, held))
				_, err = l.Extend(nilCtx, held, 3*time.Second)
				errs = append(errs, err)
				errs = append(errs, l.UnlockAll(nilCtx), l.Shutdown(nilCtx))
				errs = append(errs, lock.Run(nilCtx, l, "r", 3*time.Second, func(context.Context, lock.Lock) error { return nil }))
				for _, err := range errs {
					if !errors.Is(err, lock.ErrInvalid) {
						return fmt.Errorf("a call with a nil context = %v; want ErrInvalid", err)
					}
				}
				return errs[0]
			}
		}
	}

	for _, c := range []struct {
		name             string
		redis, memcached int
	}{
		{"redis", 1, 0}, {"redlock-3", 3, 0}, {"memcache", 0, 1}, {"memcache-quorum-3", 0, 3}, {"mixed-2redis-1memcache", 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := begin(t, "bad-input", c.name)
			b := s.badInputBackend(c.name, c.redis, c.memcached)
			rec := contention.NewRecorder()
			cases, silent := 0, 0
			for i, row := range rows {
				if row.applies != nil && !row.applies(b) {
					continue
				}
				cases++
				l := rec.Locker(i, b.locker(t, i))
				before := b.sent()
				err := row.call(s.ctx, b, l)
				after := b.sent()
				switch {
				case row.want == nil && err != nil:
					t.Errorf("%s: %v; want it to work", row.name, err)
				case row.want != nil && !errors.Is(err, row.want):
					t.Errorf("%s: %v; want an error matching %v", row.name, err, row.want)
				case row.want != nil && errors.Is(err, lock.ErrInvalid) && err.Error() == lock.ErrInvalid.Error():
					t.Errorf("%s: %q does not say what was wrong", row.name, err)
				}
				if !row.sends {
					if after != before {
						t.Errorf("%s: %d commands reached the servers; want none", row.name, after-before)
					}
					silent++
				}
				if n, err := faultkit.Residue(s.ctx, 3*time.Second, b.count); n != 0 || err != nil {
					t.Errorf("%s: %d locks left (%v); want none", row.name, n, err)
				}
			}
			rep := contention.Analyze("bad-input", c.name, rec)
			rep.Add("cases", fmt.Sprint(cases))
			rep.Add("refused_before_sending", fmt.Sprint(silent))
			s.finish(rep, b.count)
		})
	}
}

// Bad configuration, refused when the locker or the store is made: before
// anything can be sent.
func TestBadConfiguration(t *testing.T) {
	s := begin(t, "bad-configuration", "redis+memcache")
	rs := s.redisServers(1)
	ms := s.memcacheServers(1, nil)
	rc := s.redisClient(rs[0].Addr())
	mc := s.memcacheClient(ms[0].Addr())
	st, err := redis.New(rc, redis.WithPrefix(s.prefix()))
	if err != nil {
		t.Fatal(err)
	}
	other, err := redis.New(rc, redis.WithPrefix(s.prefix()))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func() error{
		"no stores":            func() error { _, err := lock.NewMulti(nil, nil); return err },
		"empty store list":     func() error { _, err := lock.NewMulti([]lock.Store{}, nil); return err },
		"the same store twice": func() error { _, err := lock.NewMulti([]lock.Store{st, other, st}, nil); return err },
		"a quorum of a minority": func() error {
			_, err := lock.NewMulti([]lock.Store{st, other}, &lock.Options{Quorum: quorum.AtLeast(1)})
			return err
		},
		"a quorum that cannot be met": func() error {
			_, err := lock.NewMulti([]lock.Store{st, other}, &lock.Options{Quorum: quorum.AtLeast(3)})
			return err
		},
		"drift factor out of range":  func() error { _, err := lock.NewSingle(st, &lock.Options{DriftFactor: 0.7}); return err },
		"negative store timeout":     func() error { _, err := lock.NewSingle(st, &lock.Options{StoreTimeout: -time.Second}); return err },
		"a quorum on a single store": func() error { _, err := lock.NewSingle(st, &lock.Options{Quorum: quorum.Majority{}}); return err },
		"nil store":                  func() error { _, err := lock.NewSingle(nil, nil); return err },
		"redis prefix with a brace":  func() error { _, err := redis.New(rc, redis.WithPrefix("a{")); return err },
		"redis restart guard of 0":   func() error { _, err := redis.New(rc, redis.WithRestartGuard(0)); return err },
		"redis guard with replicas": func() error {
			_, err := redis.New(rc, redis.WithRestartGuard(time.Second), redis.WithWaitReplicas(1, time.Second))
			return err
		},
		"redis zero replicas":        func() error { _, err := redis.New(rc, redis.WithWaitReplicas(0, time.Second)); return err },
		"memcache prefix with space": func() error { _, err := memcache.New(mc, memcache.WithPrefix("a b")); return err },
		"memcache prefix too long":   func() error { _, err := memcache.New(mc, memcache.WithPrefix(strings.Repeat("p", 300))); return err },
		"memcache TTL beyond 2038": func() error {
			ms, err := memcache.New(mc)
			if err != nil {
				return err
			}
			return ms.Acquire(s.ctx, "r", "t", 20*365*24*time.Hour)
		},
	}
	obs := s.nodes(rs)[0]
	before, _ := lockCommands(obs)
	mBefore, _ := memcacheCommands(ms[0])
	for name, build := range cases {
		if err := build(); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: %v; want an error matching lock.ErrInvalid", name, err)
		}
	}
	after, _ := lockCommands(obs)
	mAfter, _ := memcacheCommands(ms[0])
	if after != before || mAfter != mBefore {
		t.Errorf("%d Redis and %d memcached commands sent by bad configurations; want none", after-before, mAfter-mBefore)
	}
	rep := contention.Report{FaultSuccess: math.NaN(), Residue: contention.NotChecked, LeakedGoroutines: contention.NotChecked}
	rep.Add("cases", fmt.Sprint(len(cases)))
	s.finish(rep, func(ctx context.Context) (int, error) { return countRedis([]node{obs}, "") })
}
