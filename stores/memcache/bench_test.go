package memcache_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// BenchmarkLockUnlock measures lock+unlock pairs on one memcached from 64
// goroutines, each on a resource of its own: "raw" is the floor, the same
// three requests (add, gets, cas) sent with gomemcache directly, and
// "raw/fenced" adds the incr of a fence; "store" is Acquire+Release with a
// context that cannot end (no goroutine per call) and with one that can,
// and "store/fenced" is AcquireFenced+Release; "locker" is TryLock+Unlock
// through a SingleLocker (token generation, validation, held-lock
// bookkeeping), fenced as by default, and "locker/nofence" with
// Options.NoFence. The "/server" rows use a store made WithServer, which
// sends a fenced acquisition's add and incr together and releases a lock
// it took by the item's CAS id.
func BenchmarkLockUnlock(b *testing.B) {
	srv := memcachetest.Start(b, nil)
	client := srv.Client(b)
	s := newStore(b, client, memcache.WithPrefix("bench:"))
	locker, err := lock.NewSingle(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	unfenced, err := lock.NewSingle(s, &lock.Options{NoFence: true})
	if err != nil {
		b.Fatal(err)
	}
	piped := newStore(b, client, memcache.WithPrefix("bench:"), memcache.WithServer(srv.Addr()))
	defer piped.Close()
	pipedLocker, err := lock.NewSingle(piped, nil)
	if err != nil {
		b.Fatal(err)
	}
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ttl = 10 * time.Second

	raw := func(resource, token string, fenced bool) error {
		key := "bench:" + resource
		if err := client.Add(&gomemcache.Item{Key: key, Value: []byte(token), Expiration: 10}); err != nil {
			return err
		}
		if fenced {
			if _, err := client.Increment("bench:#fence", 1); err != nil {
				return err
			}
		}
		it, err := client.Get(key)
		if err != nil {
			return err
		}
		if string(it.Value) != token {
			return fmt.Errorf("token %q; want %q", it.Value, token)
		}
		it.Value, it.Expiration = nil, -1
		return client.CompareAndSwap(it)
	}
	if err := client.Set(&gomemcache.Item{Key: "bench:#fence", Value: []byte("1")}); err != nil {
		b.Fatal(err)
	}
	pairs := map[string]func(resource, token string) error{
		"raw":        func(resource, token string) error { return raw(resource, token, false) },
		"raw/fenced": func(resource, token string) error { return raw(resource, token, true) },
		"store/fenced": func(resource, token string) error {
			if _, err := s.AcquireFenced(context.Background(), resource, token, ttl); err != nil {
				return err
			}
			return s.Release(context.Background(), resource, token)
		},
		"store/fenced/server": func(resource, token string) error {
			if _, err := piped.AcquireFenced(context.Background(), resource, token, ttl); err != nil {
				return err
			}
			return piped.Release(context.Background(), resource, token)
		},
		"locker/server": func(resource, _ string) error {
			l, err := pipedLocker.TryLock(context.Background(), resource, ttl)
			if err != nil {
				return err
			}
			return pipedLocker.Unlock(context.Background(), l)
		},
		"locker/nofence": func(resource, _ string) error {
			l, err := unfenced.TryLock(context.Background(), resource, ttl)
			if err != nil {
				return err
			}
			return unfenced.Unlock(context.Background(), l)
		},
		"store/background": func(resource, token string) error {
			if err := s.Acquire(context.Background(), resource, token, ttl); err != nil {
				return err
			}
			return s.Release(context.Background(), resource, token)
		},
		"store/cancelable": func(resource, token string) error {
			if err := s.Acquire(cancelable, resource, token, ttl); err != nil {
				return err
			}
			return s.Release(cancelable, resource, token)
		},
		"locker": func(resource, _ string) error {
			l, err := locker.TryLock(context.Background(), resource, ttl)
			if err != nil {
				return err
			}
			return locker.Unlock(context.Background(), l)
		},
	}
	for _, name := range []string{"raw", "store/background", "store/cancelable", "locker/nofence", "raw/fenced", "store/fenced", "locker", "store/fenced/server", "locker/server"} {
		pair := pairs[name]
		b.Run(name, func(b *testing.B) {
			var g atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32) // 64 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				resource := fmt.Sprintf("%s/%d", name, g.Add(1))
				token := resource + "-token"
				for pb.Next() {
					if err := pair(resource, token); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
