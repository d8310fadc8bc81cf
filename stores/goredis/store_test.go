package goredis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/goredis"
)

func TestNewValidates(t *testing.T) {
	client := clientOf(t, redistest.Start(t))
	for name, opt := range map[string]goredis.Option{
		"prefix with {":          goredis.WithPrefix("a{"),
		"prefix with }":          goredis.WithPrefix("}"),
		"empty name":             goredis.WithName(""),
		"zero replicas":          goredis.WithWaitReplicas(0, time.Second),
		"sub-ms replica timeout": goredis.WithWaitReplicas(1, time.Microsecond),
		"zero fence retention":   goredis.WithFenceRetention(0),
		"zero guard":             goredis.WithRestartGuard(0),
	} {
		if _, err := goredis.New(client, opt); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("New with %s = %v; want an error matching lock.ErrInvalid", name, err)
		}
	}
	if _, err := goredis.New(client, goredis.WithRestartGuard(time.Second), goredis.WithWaitReplicas(1, time.Second)); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New with a guard and replicas = %v; want lock.ErrInvalid", err)
	}
	if _, err := goredis.New(nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New(nil) = %v; want an error matching lock.ErrInvalid", err)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := goredis.New(ring); !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "Ring") {
		t.Errorf("New(ring) = %v; want lock.ErrInvalid explaining why a Ring cannot hold locks", err)
	}
	s, err := goredis.New(client, nil, goredis.WithPrefix(""))
	if err != nil {
		t.Fatalf("New with a nil option and an empty prefix = %v; want nil", err)
	}
	if got, want := s.String(), "goredis "+client.Options().Addr; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if s, _ := goredis.New(client, goredis.WithName("primary")); s.String() != "primary" {
		t.Errorf("String() with WithName(\"primary\") = %q", s.String())
	}
}

func TestNewRefusesGuardOnCluster(t *testing.T) {
	client := clusterClientOf(t, redistest.SharedCluster(t))
	if _, err := goredis.New(client, goredis.WithRestartGuard(time.Second)); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New(cluster, WithRestartGuard) = %v; want lock.ErrInvalid", err)
	}
}

func TestValidation(t *testing.T) {
	s := newStore(t, clientOf(t, redistest.Start(t)))
	ctx := ctxFor(t, 10*time.Second)
	long := strings.Repeat("r", goredis.MaxResourceLen+1)
	if err := s.ValidateResource(long); !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "4097 bytes") {
		t.Errorf("ValidateResource(%d bytes) = %v; want lock.ErrInvalid naming the length", len(long), err)
	}
	if err := s.Acquire(ctx, long, "t", time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Acquire(too long) = %v; want lock.ErrInvalid", err)
	}
	if err := s.Acquire(ctx, "r", "", time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Acquire(empty token) = %v; want lock.ErrInvalid", err)
	}
	if _, err := s.AcquireFenced(ctx, "r", "t", 0); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("AcquireFenced(ttl 0) = %v; want lock.ErrInvalid", err)
	}
}

// A lock key holding another type of value (a list some other program
// wrote there) is an error of the store, never contention.
func TestWrongTypeIsAnError(t *testing.T) {
	srv := redistest.Start(t)
	client := clientOf(t, srv)
	ctx := ctxFor(t, 10*time.Second)
	for _, replicated := range []bool{false, true} {
		var opts []goredis.Option
		if replicated {
			opts = append(opts, goredis.WithWaitReplicas(1, 10*time.Millisecond))
		}
		s := newStore(t, client, append(opts, goredis.WithPrefix("wt:"))...)
		if err := srv.Do("LPUSH", "wt:{r}", "x").Error(); err != nil {
			t.Fatal(err)
		}
		check := func(call string, err error) {
			t.Helper()
			if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("%s (replicated %v) on a list = %v; want a WRONGTYPE error, not a lock outcome", call, replicated, err)
			}
		}
		check("Acquire", s.Acquire(ctx, "r", "tok", time.Second))
		_, err := s.AcquireFenced(ctx, "r", "tok", time.Second)
		check("AcquireFenced", err)
		check("Release", s.Release(ctx, "r", "tok"))
		check("Extend", s.Extend(ctx, "r", "tok", time.Second))
		l, err := lock.NewSingle(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryLock(ctx, "r", time.Second); !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("TryLock (replicated %v) on a list = %v; want ErrUnavailable, not ErrNotAcquired", replicated, err)
		}
		if typ, err := srv.Do("TYPE", "wt:{r}").ToString(); err != nil || typ != "list" {
			t.Errorf("TYPE after the calls = %q, %v; want the list untouched", typ, err)
		}
		if err := srv.Do("DEL", "wt:{r}", "wt:{r}:fence").Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTTLOfKeyWithoutTTL: a lock key without a TTL is not a lock of a
// store; TTL says so rather than reporting it held forever.
func TestTTLOfKeyWithoutTTL(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, clientOf(t, srv), goredis.WithPrefix("nottl:"))
	ctx := ctxFor(t, 10*time.Second)
	if err := srv.Do("SET", "nottl:{r}", "x").Error(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.TTL(ctx, "r"); err == nil || !strings.Contains(err.Error(), "no TTL") {
		t.Errorf("TTL of a key without a TTL = %v; want an error saying so", err)
	}
}

// TestNotReplicated: an acquisition that no replica confirms fails with
// ErrNotReplicated and leaves nothing behind.
func TestNotReplicated(t *testing.T) {
	srv := redistest.Start(t) // no replica
	s := newStore(t, clientOf(t, srv), goredis.WithPrefix("norepl:"), goredis.WithWaitReplicas(1, 20*time.Millisecond))
	ctx := ctxFor(t, 10*time.Second)
	for _, fenced := range []bool{false, true} {
		var err error
		if fenced {
			_, err = s.AcquireFenced(ctx, "r", "tok", time.Minute)
		} else {
			err = s.Acquire(ctx, "r", "tok", time.Minute)
		}
		if !errors.Is(err, goredis.ErrNotReplicated) || !errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("acquisition (fenced %v) without replicas = %v; want ErrNotReplicated", fenced, err)
		}
		if n, err := srv.Do("EXISTS", "norepl:{r}").AsInt64(); err != nil || n != 0 {
			t.Errorf("EXISTS after the unreplicated acquisition (fenced %v) = %d, %v; want 0: the store must release it", fenced, n, err)
		}
	}
}

// TestContextBoundsCallsWithoutContextTimeouts: with a client that does
// not bound commands by their context (ContextTimeoutEnabled false, a
// long ReadTimeout), a call on a paused server still ends with its
// context, as an error that is not a lock outcome. The bound is the
// property under test: without it the call would last the ReadTimeout.
func TestContextBoundsCallsWithoutContextTimeouts(t *testing.T) {
	srv := redistest.Start(t)
	client := clientOf(t, srv, func(o *redis.Options) {
		o.ContextTimeoutEnabled = false
		o.ReadTimeout = time.Minute
	})
	s := newStore(t, client)
	ctx := ctxFor(t, 10*time.Second)
	if err := client.Ping(ctx).Err(); err != nil { // a connection before the pause
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Resume() }()
	for name, call := range map[string]func(context.Context) error{
		"Acquire": func(ctx context.Context) error { return s.Acquire(ctx, "r", "tok", time.Second) },
		"Release": func(ctx context.Context) error { return s.Release(ctx, "r", "tok") },
		"Exists":  func(ctx context.Context) error { _, err := s.Exists(ctx, "r"); return err },
	} {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		start := time.Now()
		err := call(cctx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("%s on a paused server = %v; want context.DeadlineExceeded", name, err)
		}
		if took > 5*time.Second {
			t.Errorf("%s on a paused server took %v with a 100ms context; want it bounded by the context, not the 1m ReadTimeout", name, took)
		}
	}
}
