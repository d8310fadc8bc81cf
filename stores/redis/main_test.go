package redis_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.CloseShared()
	os.Exit(code)
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
