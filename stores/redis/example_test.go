package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/redis"
)

// A lock on a single Redis server. These examples need a server, so they
// are compiled but not run.
func Example() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	store, err := redis.New(client, redis.WithPrefix("myapp:lock:"))
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

// A lock on a Redis Cluster: the same store, with a cluster client. Each
// lock's keys share one slot, so every operation stays on one node.
func Example_cluster() {
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{"node1.example:7000", "node2.example:7000", "node3.example:7000"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Optionally wait for a replica to have each lock, so that a failover
	// does not lose it.
	store, err := redis.New(client, redis.WithWaitReplicas(1, 20*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		log.Fatal(err)
	}

	// Lock retries until ctx ends; its error then carries the last
	// attempt's, such as a lock no replica confirmed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = lock.Run(ctx, locker, "reports/daily", 30*time.Second, func(ctx context.Context, l lock.Lock) error {
		// ctx is canceled if the lock is lost; the lock is extended while
		// this runs and released when it returns.
		return nil
	})
	if errors.Is(err, redis.ErrNotReplicated) {
		log.Print("no replica confirmed the lock in time")
	}
}

// Redlock: the same lock taken on a majority of independent masters, so
// that losing a minority of them loses no lock.
func Example_redlock() {
	addrs := []string{"master1.example:6379", "master2.example:6379", "master3.example:6379", "master4.example:6379", "master5.example:6379"}
	var stores []lock.Store
	for _, addr := range addrs {
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			log.Fatal(err)
		}
		defer client.Close()
		store, err := redis.New(client)
		if err != nil {
			log.Fatal(err)
		}
		stores = append(stores, store)
	}
	// Each store gets at most StoreTimeout per call, so a dead or stalled
	// master slows nothing down.
	locker, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	l, err := locker.Lock(ctx, "payments/7", 10*time.Second)
	var lerr *lock.Error
	if errors.As(err, &lerr) {
		for _, s := range lerr.Stores {
			log.Printf("%s: %v", s.Store, s.Err) // which masters failed, and why
		}
	}
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Unlock(ctx, l)
}
