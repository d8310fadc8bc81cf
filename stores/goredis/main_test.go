package goredis_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redissuite"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/goredis"
)

// TestSuite runs the behaviour suite of the Redis stores, shared with the
// rueidis store, through this store.
func TestSuite(t *testing.T) {
	redissuite.Run(t, redissuite.Factory{
		Client: func(t testing.TB, server any) any {
			switch srv := server.(type) {
			case *redistest.Server:
				return clientOf(t, srv)
			case *redistest.Cluster:
				return clusterClientOf(t, srv)
			case *redistest.Sentinel:
				return sentinelClientOf(t, srv)
			}
			panic(fmt.Sprintf("no client for %T", server))
		},
		New: func(client any, opts ...redisstore.Option) (redissuite.Store, error) {
			s, err := goredis.New(client.(redis.UniversalClient), opts...)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Engine: func(s redissuite.Store) *redisstore.Store { return s.(*goredis.Store).Store },
	})
}

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the fault tests make many.
	redis.SetLogger(quiet{})
	code := m.Run()
	redistest.CloseShared()
	os.Exit(code)
}

var prefixes atomic.Int64

// newStore returns a store on client with a key prefix no other store of
// the test binary uses.
func newStore(t testing.TB, client redis.UniversalClient, opts ...goredis.Option) *goredis.Store {
	t.Helper()
	opts = append([]goredis.Option{goredis.WithPrefix(fmt.Sprintf("test%d:", prefixes.Add(1)))}, opts...)
	s, err := goredis.New(client, opts...)
	if err != nil {
		t.Fatalf("goredis.New: %v", err)
	}
	return s
}

// clientOf returns a go-redis client of srv, closed when t ends: bounded
// by the contexts of its commands, as the package documentation
// recommends. opts may adjust its options.
func clientOf(t testing.TB, srv *redistest.Server, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: srv.Addr(), DialTimeout: 2 * time.Second, ContextTimeoutEnabled: true}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterClientOf returns a go-redis cluster client of c, closed when t
// ends.
func clusterClientOf(t testing.TB, c *redistest.Cluster) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DialTimeout: 2 * time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// sentinelClientOf returns a go-redis failover client that finds the
// fixture's master through its Sentinel, closed when t ends.
func sentinelClientOf(t testing.TB, s *redistest.Sentinel) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            redistest.MasterSet,
		SentinelAddrs:         []string{s.Sentinel.Addr()},
		DialTimeout:           2 * time.Second,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// quiet is a go-redis logger that logs nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// queued returns how many entries the waiters' queue of the lock at key
// holds on srv: one per waiting caller in line.
func queued(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	n, err := srv.Do("LLEN", key+":waiters").AsInt64()
	if err != nil {
		t.Fatalf("LLEN %s:waiters = %v", key, err)
	}
	return n
}

func ctxFor(t *testing.T, d time.Duration) context.Context { return redissuite.CtxFor(t, d) }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	redissuite.Eventually(t, what, cond)
}
