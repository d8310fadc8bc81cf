package faultsuite_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/memcachetest"
)

// flood fills srv with items the size of a lock (so they share its slab
// class) until memcached has evicted as many items as it holds or refused
// 500 writes for want of memory. It returns the writes refused.
func flood(t *testing.T, srv *memcachetest.Server, keyLen, valueLen int) (refused int) {
	t.Helper()
	c := gomemcache.New(srv.Addr())
	c.Timeout = time.Second
	c.MaxIdleConns = 8
	defer c.Close()
	value := []byte(strings.Repeat("v", valueLen))
	const batch, workers, maxItems = 5000, 4, 400_000
	var mu sync.Mutex
	for sent := 0; sent < maxItems; sent += batch {
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < batch; i += workers {
					key := fmt.Sprintf("f%0*d", keyLen-1, sent+i)
					switch err := c.Set(&gomemcache.Item{Key: key, Value: value, Expiration: 600}); {
					case err == nil:
					case strings.Contains(err.Error(), "out of memory"):
						mu.Lock()
						refused++
						mu.Unlock()
					default:
						errs[w] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("flooding memcached: %v", err)
		}
		evictions, err := srv.Stat("evictions")
		if err != nil {
			t.Fatal(err)
		}
		items, err := srv.Stat("curr_items")
		if err != nil {
			t.Fatal(err)
		}
		if evictions > items || refused >= 500 {
			return refused
		}
	}
	t.Fatalf("flooded memcached with %d items: it neither evicted as many as it holds nor ran out of memory", maxItems)
	return refused
}

// A memcached that runs out of memory evicts items — a held lock
// included — unless it runs with -M. A client holds a lock; the server
// fills up; another client tries to take the lock while the first holds
// it. Without -M it gets it (the positive control "memcached without
// -M"); with -M the lock survives and the new acquisition fails.
func TestMemcacheEviction(t *testing.T) {
	for _, noEvict := range []bool{false, true} {
		name, backend := "control-memcache-without-M", "memcache-evicting"
		if noEvict {
			name, backend = "memcache-eviction", "memcache-M"
		}
		t.Run(backend, func(t *testing.T) {
			s := begin(t, name, backend)
			s.control = !noEvict
			servers := s.memcacheServers(1, &memcachetest.Options{MemoryMB: 2, NoEvict: noEvict})
			b, prefix := s.memcacheBackend(backend, servers)
			rec := contention.NewRecorder()
			first, second := rec.Locker(0, b.locker(t, 0)), rec.Locker(1, b.locker(t, 1))
			// Without -M the first lock must still be valid after the
			// flood, however slow the machine; with -M its release may fail
			// for want of memory, and it must expire before the end.
			ttl := 10 * time.Second
			if noEvict {
				ttl = 3 * time.Second
			}
			held, err := first.TryLock(s.ctx, "r", ttl)
			if err != nil {
				t.Fatal(err)
			}
			refused := flood(t, servers[0], len(prefix+"r"), len(held.Token))
			other, err := second.TryLock(s.ctx, "r", ttl)
			switch {
			case noEvict && err == nil:
				t.Errorf("another client took the lock on memcached -M")
			case noEvict && errors.Is(err, lock.ErrNotAcquired):
			case noEvict && strings.Contains(err.Error(), "out of memory"):
				// The server is full: no new item, the lock held all the same.
			case noEvict:
				t.Errorf("TryLock on a full memcached -M = %v; want ErrNotAcquired or an out-of-memory error", err)
			case err != nil:
				t.Fatalf("TryLock after the lock was evicted = %v", err)
			default:
				time.Sleep(holdFor)
				_ = second.Unlock(s.ctx, other)
			}
			if err := first.Unlock(s.ctx, held); err != nil {
				t.Logf("first Unlock: %v", err)
			}
			evictions, _ := servers[0].Stat("evictions")
			rep := contention.Analyze(name, backend, rec)
			rep.Add("evictions", fmt.Sprint(evictions))
			rep.Add("writes_refused", fmt.Sprint(refused))
			// With -M the server is full: the release may fail for want
			// of memory, and the lock then runs out its TTL.
			s.finish(rep, b.count)
		})
	}
}

// A memcached that restarts comes back empty. One server: another client
// takes every lock it held at once — the documented hazard of a single
// memcached (a control: the checker must see it). Three servers under a
// majority, the restarted one among those holding the lock: the other two
// still hold it, and nothing is granted twice. With stores made
// WithServer, which release by CAS id, the first owner's Unlock comes
// while the second owner holds the lock under an item of the new run,
// whose CAS id may equal the one the first owner's store recorded: the
// second owner's lock must survive it.
func TestMemcacheRestart(t *testing.T) {
	for _, backend := range []string{"memcache", "memcache-server", "memcache-quorum-3"} {
		n, name := 1, "control-memcache-restart"
		switch backend {
		case "memcache-server":
			name = "control-memcache-restart-server"
		case "memcache-quorum-3":
			n, name = 3, "memcache-restart-one"
		}
		t.Run(backend, func(t *testing.T) {
			s := begin(t, name, backend)
			s.control = n == 1
			servers := s.memcacheServers(n, nil)
			b, _ := s.memcacheBackendWith(backend, servers, backend == "memcache-server")
			rec := contention.NewRecorder()
			first, second := rec.Locker(0, b.locker(t, 0)), rec.Locker(1, b.locker(t, 1))
			const ttl = 10 * time.Second
			granted := 0
			for round := range 3 {
				resource := fmt.Sprintf("r%d", round)
				held, err := first.TryLock(s.ctx, resource, ttl)
				if err != nil {
					t.Fatal(err)
				}
				if err := servers[0].Restart(); err != nil {
					t.Fatal(err)
				}
				other, err := tryReconnected(s.ctx, second, resource, ttl)
				switch {
				case err == nil && backend == "memcache-server":
					granted++
					_ = first.Unlock(s.ctx, held)
					if ok, err := b.stores(0)[0].Exists(s.ctx, resource); !ok || err != nil {
						t.Errorf("round %d: Exists(%s) after the first owner's Unlock = %v, %v; want the second owner's lock still there", round, resource, ok, err)
					}
					time.Sleep(holdFor)
					_ = second.Unlock(s.ctx, other)
					continue
				case err == nil:
					granted++
					time.Sleep(holdFor)
					_ = second.Unlock(s.ctx, other)
				case n == 1:
					t.Errorf("round %d: TryLock on a restarted memcached = %v; want the lock (it forgot it)", round, err)
				}
				_ = first.Unlock(s.ctx, held)
			}
			rep := contention.Analyze(name, backend, rec)
			rep.Add("second_owner_locks", fmt.Sprint(granted))
			s.finish(rep, b.count)
		})
	}
}
