package redis_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redissuite"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.CloseShared()
	os.Exit(code)
}

// TestSuite runs the behaviour suite of the Redis stores, shared with the
// go-redis store, through this store.
func TestSuite(t *testing.T) {
	redissuite.Run(t, factory)
}

var factory = redissuite.Factory{
	Client: func(t testing.TB, server any) any {
		switch srv := server.(type) {
		case *redistest.Server:
			return srv.NewClient(t, func(o *rueidis.ClientOption) { o.DisableRetry = true })
		case *redistest.Cluster:
			return srv.NewClient(t)
		case *redistest.Sentinel:
			return srv.NewClient(t)
		}
		panic(fmt.Sprintf("no client for %T", server))
	},
	New: func(client any, opts ...redisstore.Option) (redissuite.Store, error) {
		s, err := redis.New(client.(rueidis.Client), opts...)
		if err != nil {
			return nil, err
		}
		return s, nil
	},
	Engine: func(s redissuite.Store) *redisstore.Store { return s.(*redis.Store).Store },
}

var prefixes atomic.Int64

// newStore returns a store on client with a key prefix no other store of
// the test binary uses.
func newStore(t testing.TB, client rueidis.Client, opts ...redis.Option) *redis.Store {
	t.Helper()
	opts = append([]redis.Option{redis.WithPrefix(fmt.Sprintf("test%d:", prefixes.Add(1)))}, opts...)
	s, err := redis.New(client, opts...)
	if err != nil {
		t.Fatalf("redis.New: %v", err)
	}
	return s
}
