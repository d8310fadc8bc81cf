package redis_test

import (
	"testing"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redisfaults"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// TestFaults runs the Redis fault scenarios, shared with the go-redis
// store, on this store.
func TestFaults(t *testing.T) {
	redisfaults.Run(t, redisfaults.Factory{
		Server:  func(t *testing.T, srv *redistest.Server) lock.Store { return newStore(t, srv.NewClient(t)) },
		Cluster: func(t *testing.T, c *redistest.Cluster) lock.Store { return newStore(t, c.NewClient(t)) },
	})
}
