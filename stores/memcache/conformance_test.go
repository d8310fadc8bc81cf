package memcache_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// TestConformance runs the suite on a real memcached, every store under a
// prefix of its own, with the store's one-second granularity. Restart
// restarts the server, which comes back empty.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	var n atomic.Int64
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		s, err := memcache.New(client, memcache.WithPrefix(fmt.Sprintf("conformance-%d:", n.Add(1))))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, &conformance.Options{Restart: func(t *testing.T) {
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		// Drop the client's idle connections to the old process, so that
		// no call after the restart fails on one.
		if err := client.Close(); err != nil {
			t.Fatal(err)
		}
	}})
}
