package memcache_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// TestConformance runs the suite on a real memcached, every store under a
// prefix of its own, with the store's one-second granularity, through the
// client alone and with WithServer. Restart restarts the server, which
// comes back empty.
func TestConformance(t *testing.T) {
	t.Parallel()
	eachWay(t, func(t *testing.T, withServer bool) {
		srv := memcachetest.Start(t, nil)
		client := srv.Client(t)
		var n atomic.Int64
		var mu sync.Mutex
		var stores []*memcache.Store
		conformance.TestStore(t, func(t *testing.T) lock.Store {
			opts := []memcache.Option{memcache.WithPrefix(fmt.Sprintf("conformance-%d:", n.Add(1)))}
			if withServer {
				opts = append(opts, memcache.WithServer(srv.Addr()))
			}
			s, err := memcache.New(client, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			mu.Lock()
			stores = append(stores, s)
			mu.Unlock()
			return s
		}, &conformance.Options{Restart: func(t *testing.T) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			// Drop the client's and the stores' idle connections to the
			// old process, so that no call after the restart fails on one.
			if err := client.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range stores {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}})
	})
}
