package etcd_test

import (
	"context"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/etcd"
)

// A lock on a three-member cluster, with a call bound so that a leader
// dying under a call costs about an election, not etcd's request timeout.
// The fence is etcd's revision of the lock's key: pass it to the
// protected resource, which refuses writes with a lower one.
func Example() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"10.0.0.1:2379", "10.0.0.2:2379", "10.0.0.3:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store, err := etcd.New(client, etcd.WithPrefix("myapp/lock/"), etcd.WithTimeout(2*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		log.Fatal(err)
	}

	err = lock.Run(context.Background(), locker, "invoices/42", 10*time.Second, func(ctx context.Context, l lock.Lock) error {
		fmt.Println("holding invoices/42 with fence", l.Fence)
		return nil // work with ctx: it is canceled if the lock is lost
	})
	if err != nil {
		log.Fatal(err)
	}
}
