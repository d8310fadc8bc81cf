package memcache_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// Calls whose context can end run in goroutines that serve one call after
// another; once the calls stop, those goroutines end too. (Not parallel:
// other tests' calls would keep them busy.)
func TestNoGoroutineLeftBehind(t *testing.T) {
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"))
	base := faultkit.Goroutines()
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fmt.Sprint("r", w)
			for range 50 {
				if err := s.Acquire(c, r, "a", time.Minute); err != nil {
					t.Errorf("Acquire(%s) = %v", r, err)
					return
				}
				if err := s.Release(c, r, "a"); err != nil {
					t.Errorf("Release(%s) = %v", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if leaked := base.Leaked(10 * time.Second); len(leaked) > 0 {
		t.Errorf("%d goroutines still running 10s after the last call; want none, the first:\n%s", len(leaked), leaked[0])
	}
}
