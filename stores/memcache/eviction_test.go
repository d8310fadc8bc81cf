package memcache_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// memcached is a cache: these tests show what that means for locks.

// flood fills srv with items of a lock's size (keys and values as long as
// a lock's, so they share its slab class) until memcached has evicted as
// many items as it holds, or refused 1000 writes for want of memory. It
// returns the number of writes refused. At most 400,000 items are sent.
func flood(t *testing.T, srv *memcachetest.Server, keyLen, valueLen int) (refused int) {
	t.Helper()
	client := srv.Client(t)
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
					err := client.Set(&gomemcache.Item{Key: key, Value: value, Expiration: 600})
					switch {
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
		if evictions > items || refused >= 1000 {
			t.Logf("flooded with %d items: %d evicted, %d held, %d refused for want of memory", sent+batch, evictions, items, refused)
			return refused
		}
	}
	t.Fatalf("flooded with %d items and memcached neither evicted as many items as it holds nor ran out of memory", maxItems)
	return refused
}

// A full memcached evicts items to make room — a held lock included. The
// holder learns it at its next Extend or Unlock, which report the lock
// not held; by then another owner may have taken it. Hence: -M.
func TestEvictionLosesLock(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, &memcachetest.Options{MemoryMB: 2})
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"))
	locker, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := make([]lock.Lock, 2)
	for i := range held {
		if held[i], err = locker.TryLock(ctx(t), fmt.Sprintf("r%d", i), time.Minute); err != nil {
			t.Fatalf("TryLock(r%d) = %v", i, err)
		}
	}
	flood(t, srv, len("p:r0"), len(held[0].Token))

	if _, err := locker.Extend(ctx(t), held[0], time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(r0) after its item was evicted = %v; want ErrNotHeld", err)
	}
	if err := locker.Unlock(ctx(t), held[1]); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Unlock(r1) after its item was evicted = %v; want ErrNotHeld", err)
	}
	// The danger: another owner takes the resource at once.
	if _, err := locker.TryLock(ctx(t), "r1", time.Minute); err != nil {
		t.Errorf("TryLock(r1) by another owner after eviction = %v; want nil (the lock was lost)", err)
	}
}

// With -M a full memcached refuses new items instead of evicting: a held
// lock survives the flood, and new locks fail with an error — never
// reported as contention. memcached also needs memory to rewrite an item,
// so Extend and Unlock fail too (with an error, not ErrNotHeld) until
// memory is freed; the lock then simply runs out its TTL.
func TestNoEvictionKeepsLock(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, &memcachetest.Options{MemoryMB: 2, NoEvict: true})
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"))
	locker, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	held, err := locker.TryLock(ctx(t), "r", time.Minute)
	if err != nil {
		t.Fatalf("TryLock(r) = %v", err)
	}
	if refused := flood(t, srv, len("p:r"), len(held.Token)); refused == 0 {
		t.Fatal("memcached -M refused no write; the flood did not fill it")
	}
	if n, err := srv.Stat("evictions"); err != nil || n != 0 {
		t.Fatalf("memcached -M evicted %d items (%v); want 0", n, err)
	}
	if it, found := item(t, srv, "p:r"); !found || it.Value != held.Token {
		t.Fatalf("after the flood: r holds %+v, found %v; want the holder's token", it, found)
	}
	if locked, err := locker.IsLocked(ctx(t), "r"); err != nil || !locked {
		t.Errorf("IsLocked(r) after the flood = %v, %v; want true", locked, err)
	}

	_, err = locker.TryLock(ctx(t), "new", time.Minute)
	if errors.Is(err, lock.ErrNotAcquired) || !errors.Is(err, lock.ErrUnavailable) || !strings.Contains(err.Error(), "out of memory") {
		t.Errorf("TryLock(new) on a full memcached -M = %v; want ErrUnavailable with memcached's out-of-memory error", err)
	}
	_, err = locker.Extend(ctx(t), held, time.Minute)
	t.Logf("Extend(r) on a full memcached -M: %v", err)
	if errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(r) on a full memcached -M = %v; the lock is there: want nil or a failure, not ErrNotHeld", err)
	}
	err = locker.Unlock(ctx(t), held)
	t.Logf("Unlock(r) on a full memcached -M: %v", err)
	if errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Unlock(r) on a full memcached -M = %v; the lock is there: want nil or a failure, not ErrNotHeld", err)
	}
}

// A restarted memcached comes back empty: the holder's next Extend or
// Unlock reports the lock not held — not the failure of an idle connection
// to the old process, of which the client keeps several here — and
// another owner can take it.
// With WithServer, the same holds of the store's own idle connections,
// on which it releases by CAS id.
func TestRestartLosesLock(t *testing.T) {
	t.Parallel()
	eachWay(t, testRestartLosesLock)
}

func testRestartLosesLock(t *testing.T, withServer bool) {
	srv := memcachetest.Start(t, nil)
	s, _ := fenceStore(t, srv, srv.Client(t), withServer)
	locker, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := make([]lock.Lock, 2)
	for i := range held {
		if held[i], err = locker.TryLock(ctx(t), fmt.Sprintf("r%d", i), time.Minute); err != nil {
			t.Fatalf("TryLock(r%d) = %v", i, err)
		}
	}
	idleConnections(t, s, 8)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Extend(ctx(t), held[0], time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(r0) after a restart = %v; want ErrNotHeld", err)
	}
	if err := locker.Unlock(ctx(t), held[1]); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Unlock(r1) after a restart = %v; want ErrNotHeld", err)
	}
	if ok, err := s.Exists(ctx(t), "r1"); ok || err != nil {
		t.Errorf("Exists(r1) after a restart = %v, %v; want false, nil", ok, err)
	}
	if h, ok, err := s.Holder(ctx(t), "r1"); h != "" || ok || err != nil {
		t.Errorf("Holder(r1) after a restart = %q, %v, %v; want \"\", false, nil", h, ok, err)
	}
	if _, err := locker.TryLock(ctx(t), "r0", time.Minute); err != nil {
		t.Errorf("TryLock(r0) by another owner after a restart = %v; want nil (the lock was lost)", err)
	}
}

// An acquisition is not sent again when its add fails on an idle
// connection to a memcached that restarted (it may have taken effect): it
// fails with an error, never ErrNotAcquired, and the next one, on a new
// connection, takes the lock.
func TestAcquireFailsOnConnectionRestartBroke(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"))
	locker, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	idleConnections(t, s, 1)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	_, err = locker.TryLock(ctx(t), "r", time.Minute)
	if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("TryLock(r) on the connection the restart broke = %v; want ErrUnavailable, not ErrNotAcquired", err)
	}
	if _, err := locker.TryLock(ctx(t), "r", time.Minute); err != nil {
		t.Fatalf("TryLock(r) again = %v; want nil", err)
	}
}

// idleConnections leaves connections idle in the pool of s's client: n
// reads at once leave up to n, and at least one.
func idleConnections(t *testing.T, s *memcache.Store, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { _, _ = s.Exists(ctx(t), "idle") })
	}
	wg.Wait()
}

// lock.Run keeps a lock extended; when memcached restarts, the next
// extension finds the lock gone and Run cancels the function's context
// with lock.ErrLost.
func TestRunDetectsRestart(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	locker, err := lock.NewSingle(newStore(t, srv.Client(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var cause error
	err = lock.Run(ctx(t), locker, "job", 3*time.Second, func(c context.Context, _ lock.Lock) error {
		if err := srv.Restart(); err != nil {
			return err
		}
		select {
		case <-c.Done():
			cause = context.Cause(c)
			return c.Err()
		case <-time.After(30 * time.Second):
			return errors.New("the function's context was not canceled within 30s of the restart")
		}
	}, lock.ExtendEvery(200*time.Millisecond))
	if !errors.Is(cause, lock.ErrLost) || !errors.Is(cause, lock.ErrNotHeld) {
		t.Errorf("cause of the function's cancellation = %v; want lock.ErrLost, the extension having found the lock not held", cause)
	}
	if !errors.Is(err, lock.ErrLost) {
		t.Errorf("Run = %v; want an error matching lock.ErrLost", err)
	}
}
