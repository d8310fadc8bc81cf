package goredis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/goredis"
)

// A lock on a single Redis server, through the go-redis client the
// application already has. These examples need a server, so they are
// compiled but not run.
func Example() {
	client := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:6379",
		// Bound commands by their context, so that the store needs no
		// goroutine to honour the lockers' deadlines.
		ContextTimeoutEnabled: true,
	})
	defer client.Close() // the application's: the store never closes it

	store, err := goredis.New(client, goredis.WithPrefix("myapp:lock:"))
	if err != nil {
		log.Fatal(err)
	}
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	l, err := locker.Lock(ctx, "invoice/42", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Unlock(ctx, l)
	// Pass l.Fence with every write to the protected resource, so that it
	// can refuse writes from a holder whose lock has expired.
	fmt.Println("holding", l.Resource, "with fence", l.Fence)
}

// Any client redis.NewUniversalClient makes works: here a Redis Cluster,
// where every key of a lock shares one slot.
func Example_universal() {
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 []string{"node1.example:7000", "node2.example:7000", "node3.example:7000"},
		ContextTimeoutEnabled: true,
	})
	defer client.Close()

	// Optionally wait for a replica to have each lock, so that a failover
	// does not lose it.
	store, err := goredis.New(client, goredis.WithWaitReplicas(1, 20*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = lock.Run(context.Background(), locker, "nightly-report", 30*time.Second, func(ctx context.Context, l lock.Lock) error {
		// ctx is canceled if the lock is lost; l.Fence guards the writes.
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

// Redlock over independent masters: one store per master. The stores
// implement lock.Starter, so the MultiLocker asks them all without a
// goroutine per store per call.
func Example_redlock() {
	var stores []lock.Store
	for _, addr := range []string{"redis1.example:6379", "redis2.example:6379", "redis3.example:6379"} {
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer client.Close()
		store, err := goredis.New(client, goredis.WithRestartGuard(time.Minute))
		if err != nil {
			log.Fatal(err)
		}
		stores = append(stores, store)
	}
	locker, err := lock.NewMulti(stores, nil)
	if err != nil {
		log.Fatal(err)
	}
	l, err := locker.TryLock(context.Background(), "payment/7", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Unlock(context.Background(), l)
}
