package memcache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/memcache"
	"github.com/lockkit/lock/stores/redis"
)

// A MultiLocker over two Redis servers and three memcached servers: the
// stores differ in protocol, precision (the memcached ones count whole
// seconds, so every lock's validity is a second shorter) and wake-up (only
// Redis notifies releases), yet they make one quorum. Workers contend for
// one resource with none of them ever inside together, also when one
// Redis server and then one memcached server are killed mid-run (three of
// five stores still grant).
func TestMixedQuorum(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"none", "kill"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			reds := redistest.StartN(t, 2)
			mems := memcachetest.StartN(t, 3, nil)
			var stores []lock.Store
			for i, srv := range reds {
				s, err := redis.New(srv.NewClient(t), redis.WithName(fmt.Sprintf("redis-%d", i)))
				if err != nil {
					t.Fatal(err)
				}
				stores = append(stores, s)
			}
			for i, srv := range mems {
				stores = append(stores, newStore(t, srv.Client(t), memcache.WithName(fmt.Sprintf("memcached-%d", i))))
			}
			locker, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			w := contend(t, locker, func(done, total int64) {
				switch {
				case fault == "kill" && done == total/3:
					reds[1].Close()
				case fault == "kill" && done == 2*total/3:
					mems[2].Kill()
				}
			})
			t.Logf("fault %q: %d critical sections, %d overlaps, %d unlocks reporting a failed store", fault, w.done, w.overlaps, w.unavailable)
			if w.overlaps != 0 {
				t.Errorf("workers were inside the critical section together %d times; want 0", w.overlaps)
			}
			if fault == "none" && w.unavailable != 0 {
				t.Errorf("%d unlocks reported a failed store with every server up; want 0", w.unavailable)
			}
			for _, i := range []int{0, 2, 3} { // stores whose server never failed
				if held, err := stores[i].Exists(ctx(t), "r"); err != nil || held {
					t.Errorf("%s: Exists(r) after every Unlock = %v, %v; want false, nil", stores[i], held, err)
				}
			}
		})
	}
}
