package memcache_test

import (
	"context"
	"fmt"
	"log"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memcache"
)

// A single memcached: mutual exclusion while it keeps its items (run it
// with -M). The example needs a server, so it has no output to check.
func Example() {
	const server = "127.0.0.1:11211"
	client := gomemcache.New(server)
	client.Timeout = 100 * time.Millisecond
	client.MaxIdleConns = 64 // at least the number of concurrent lock calls

	// WithServer: the client's one server, so that a fenced lock takes one
	// round trip and its release one more; Close closes the connections
	// the store opens to it.
	store, err := memcache.New(client, memcache.WithPrefix("myapp:lock:"), memcache.WithServer(server))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	// TTLs are whole seconds on memcached, and a lock's validity is one
	// second shorter than its TTL: use TTLs of several seconds.
	l, err := locker.Lock(ctx, "orders/42", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Unlock(ctx, l)
	fmt.Println("valid for", l.Remaining().Round(time.Second))
}

// Three independent memcached servers, one Store each: a lock is held
// when a majority grant it, so it survives the loss of one server.
func Example_multi() {
	var stores []lock.Store
	for i, addr := range []string{"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"} {
		client := gomemcache.New(addr)
		client.Timeout = 50 * time.Millisecond
		client.MaxIdleConns = 64
		s, err := memcache.New(client, memcache.WithName(fmt.Sprintf("memcached-%d", i)), memcache.WithServer(addr))
		if err != nil {
			log.Fatal(err)
		}
		stores = append(stores, s)
	}
	// A store timeout above the fence guard (100ms), which the first
	// fenced acquisition on a new or restarted server waits.
	locker, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: 250 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	err = lock.Run(context.Background(), locker, "reports/daily", 10*time.Second, func(ctx context.Context, l lock.Lock) error {
		// ... work, watching ctx: it is canceled if the lock is lost ...
		return nil
	})
	if err != nil {
		log.Print(err)
	}
}
