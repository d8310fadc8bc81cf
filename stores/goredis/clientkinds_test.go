package goredis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/goredis"
)

// TestContextBoundsCallsWithoutSocketDeadlines: go-redis sets no socket
// deadline at all when ReadTimeout or WriteTimeout is -2 ("disables
// SetReadDeadline calls completely"), and then ignores the context's
// deadline even with ContextTimeoutEnabled. A call on a paused server
// must still end with its context, as the package documentation
// promises, as an error that is not a lock outcome. Without the bound the
// call would wait until the server answers: the test resumes the server
// after a long while so that it ends either way.
func TestContextBoundsCallsWithoutSocketDeadlines(t *testing.T) {
	for name, set := range map[string]func(*redis.Options){
		"ReadTimeout -2":  func(o *redis.Options) { o.ReadTimeout = -2 },
		"WriteTimeout -2": func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = -2, -2 },
	} {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			client := clientOf(t, srv, set) // ContextTimeoutEnabled
			s := newStore(t, client)
			ctx := ctxFor(t, 30*time.Second)
			if err := client.Ping(ctx).Err(); err != nil { // a connection before the pause
				t.Fatal(err)
			}
			if err := srv.Pause(); err != nil {
				t.Fatal(err)
			}
			resumed := false
			resume := func() {
				if !resumed {
					resumed = true
					_ = srv.Resume()
				}
			}
			defer resume()
			for name, call := range map[string]func(context.Context) error{
				"Acquire": func(ctx context.Context) error { return s.Acquire(ctx, "r", "tok", time.Second) },
				"Release": func(ctx context.Context) error { return s.Release(ctx, "r", "tok") },
				"Exists":  func(ctx context.Context) error { _, err := s.Exists(ctx, "r"); return err },
			} {
				cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				done := make(chan error, 1)
				go func() { done <- call(cctx) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Errorf("%s on a paused server with a 100ms context has not returned after 10s; want it bounded by the context", name)
					resume()
					err = <-done
				}
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) {
					t.Errorf("%s on a paused server = %v; want context.DeadlineExceeded", name, err)
				}
			}
		})
	}
}

// uncomparableClient is a caller's own wrapper of a *redis.Client, a
// struct value with a field that makes it not comparable: a
// redis.UniversalClient all the same, which New takes.
type uncomparableClient struct {
	*redis.Client
	tags []string
}

// TestUncomparableClient: a client whose type is not comparable (New
// accepts it, and shares no subscriptions for it) works as any other: the
// pipelined calls (AcquireFenced, Start) do not panic comparing it.
func TestUncomparableClient(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, uncomparableClient{Client: clientOf(t, srv), tags: []string{"app"}})
	ctx := ctxFor(t, 10*time.Second)
	fence, err := s.AcquireFenced(ctx, "r", "tok", time.Minute)
	if err != nil || fence == 0 {
		t.Fatalf("AcquireFenced through an uncomparable client = %d, %v; want a fence", fence, err)
	}
	if err := s.Release(ctx, "r", "tok"); err != nil {
		t.Errorf("Release through an uncomparable client = %v; want nil", err)
	}
}

// A caller's own wrappers of go-redis clients, as an application makes
// to add methods of its own: each still a redis.UniversalClient.
type (
	wrappedClient  struct{ *redis.Client }
	wrappedCluster struct{ *redis.ClusterClient }
	wrappedRing    struct{ *redis.Ring }
)

// TestWrappedClientsKeepTheirKind: New takes a client wrapped in a type of
// the caller's for what it wraps: a wrapped *redis.Ring is refused as a
// Ring is (it moves keys to other shards, granting held locks again), a
// wrapped *redis.ClusterClient is a cluster (so the restart guard, which
// does not work on one, is refused as on a cluster client) and names the
// store after its seeds, a wrapped *redis.Client after its address.
func TestWrappedClientsKeepTheirKind(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2"}})
	defer ring.Close()
	if _, err := goredis.New(wrappedRing{ring}); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New(a wrapped *redis.Ring) = %v; want lock.ErrInvalid, as for a Ring", err)
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}})
	defer cc.Close()
	if _, err := goredis.New(cc, goredis.WithRestartGuard(time.Minute)); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("New(cluster client, WithRestartGuard) = %v; want lock.ErrInvalid (the control)", err)
	}
	if _, err := goredis.New(wrappedCluster{cc}, goredis.WithRestartGuard(time.Minute)); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New(a wrapped cluster client, WithRestartGuard) = %v; want lock.ErrInvalid, as for a cluster client", err)
	}
	s, err := goredis.New(wrappedCluster{cc})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "goredis 127.0.0.1:1 (+1 seeds)"; got != want {
		t.Errorf("String() of a store on a wrapped cluster client = %q; want %q", got, want)
	}

	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	s, err = goredis.New(wrappedClient{c})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "goredis 127.0.0.1:1"; got != want {
		t.Errorf("String() of a store on a wrapped client = %q; want %q", got, want)
	}
}
