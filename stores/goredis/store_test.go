package goredis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redissuite"
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
	for name, c := range map[string]redis.UniversalClient{
		"(*redis.Client)(nil)":        (*redis.Client)(nil),
		"(*redis.ClusterClient)(nil)": (*redis.ClusterClient)(nil),
	} {
		if _, err := goredis.New(c); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("New(%s) = %v; want an error matching lock.ErrInvalid", name, err)
		}
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

// TestClusterReadsFromReplicasReadsMasters: with a cluster client that
// sends reads to replicas (ReadOnly, RouteByLatency, RouteRandomly), the
// store still reads from masters, as the package documentation says (a
// replica may lag behind a lock just taken or released).
func TestClusterReadsFromReplicasReadsMasters(t *testing.T) {
	c := redistest.SharedCluster(t)
	for name, set := range map[string]func(*redis.ClusterOptions){
		"ReadOnly":       func(o *redis.ClusterOptions) { o.ReadOnly = true },
		"RouteByLatency": func(o *redis.ClusterOptions) { o.RouteByLatency = true },
		"RouteRandomly":  func(o *redis.ClusterOptions) { o.RouteRandomly = true },
	} {
		t.Run(name, func(t *testing.T) {
			prefix := "replicareads-" + name + ":"
			redissuite.ReadsOnMasters(t, c, prefix, func() redissuite.Store {
				o := &redis.ClusterOptions{Addrs: c.Addrs(), DialTimeout: 2 * time.Second, ContextTimeoutEnabled: true}
				set(o)
				cc := redis.NewClusterClient(o)
				t.Cleanup(func() { _ = cc.Close() })
				return newStore(t, cc, goredis.WithPrefix(prefix))
			})
		})
	}
}

// TestClusterReadsFromReplicasQueuesOnMasters: with a cluster client that
// sends reads to replicas, a queued acquisition's subscription is on the
// slot's master too, where the release that grants the lock looks for it
// (a subscription on a replica hears the release but is skipped by it),
// so a waiting Lock is handed the lock by the release, as the package
// documentation says.
func TestClusterReadsFromReplicasQueuesOnMasters(t *testing.T) {
	c := redistest.SharedCluster(t)
	for name, set := range map[string]func(*redis.ClusterOptions){
		"ReadOnly":       func(o *redis.ClusterOptions) { o.ReadOnly = true },
		"RouteByLatency": func(o *redis.ClusterOptions) { o.RouteByLatency = true },
		"RouteRandomly":  func(o *redis.ClusterOptions) { o.RouteRandomly = true },
	} {
		t.Run(name, func(t *testing.T) {
			prefix := "queuesonmasters-" + name + ":"
			redissuite.QueuesOnMasters(t, c, prefix, func() redissuite.Store {
				o := &redis.ClusterOptions{Addrs: c.Addrs(), DialTimeout: 2 * time.Second, ContextTimeoutEnabled: true}
				set(o)
				cc := redis.NewClusterClient(o)
				t.Cleanup(func() { _ = cc.Close() })
				return newStore(t, cc, goredis.WithPrefix(prefix))
			})
		})
	}
}
