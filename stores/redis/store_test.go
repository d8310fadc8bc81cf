package redis_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redissuite"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
	"github.com/redis/rueidis"
)

func TestNewValidates(t *testing.T) {
	client := redistest.Start(t).NewClient(t)
	for name, opt := range map[string]redis.Option{
		"prefix with {":          redis.WithPrefix("a{"),
		"prefix with }":          redis.WithPrefix("}"),
		"empty name":             redis.WithName(""),
		"zero replicas":          redis.WithWaitReplicas(0, time.Second),
		"zero replica timeout":   redis.WithWaitReplicas(1, 0),
		"sub-ms replica timeout": redis.WithWaitReplicas(1, time.Microsecond),
		"zero fence retention":   redis.WithFenceRetention(0),
	} {
		if _, err := redis.New(client, opt); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("New with %s = %v; want an error matching lock.ErrInvalid", name, err)
		}
	}
	if _, err := redis.New(nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New(nil) = %v; want an error matching lock.ErrInvalid", err)
	}
	if _, err := redis.New(client, nil, redis.WithPrefix("")); err != nil {
		t.Errorf("New with a nil option and an empty prefix = %v; want nil", err)
	}
}

func TestString(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.NewClient(t)
	s := newStore(t, client)
	if got, want := s.String(), "redis "+srv.Addr(); got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if got := newStore(t, client, redis.WithName("orders")).String(); got != "orders" {
		t.Errorf("String() with WithName(orders) = %q", got)
	}
	c := redistest.SharedCluster(t)
	if got := newStore(t, c.NewClient(t)).String(); !strings.HasPrefix(got, "redis 127.0.0.1:") || !strings.HasSuffix(got, " nodes)") {
		t.Errorf("String() of a cluster store = %q; want a node's address and the number of others", got)
	}
}

// TestOneConnectionOnSingleServer: on a single server, the store sends
// every command on one of the client's pipelined connections, in the
// order it made them, so that the release cleaning up after an
// acquisition whose caller gave up is never sent before it (rueidis picks
// one of its four connections at random for each command that names a
// key). Issue 20, item 11.
func TestOneConnectionOnSingleServer(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.NewClient(t, func(o *rueidis.ClientOption) { o.ClientName = "under-test" })
	s := newStore(t, client)
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fmt.Sprintf("r%d", i)
			for range 20 {
				if _, err := s.AcquireFenced(ctx, r, "tok", time.Minute); err != nil {
					t.Error(err)
					return
				}
				if err := s.Release(ctx, r, "tok"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	list, err := srv.Do("CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(list, "name=under-test "); n != 1 {
		t.Errorf("the client has %d connections after the store's commands; want 1", n)
	}
}

// TestClusterReadsFromReplicasReadsMasters: with a client that sends reads
// to replicas (ClientOption.SendToReplicas: the read-only commands), the
// store still reads from
// masters, as the package documentation says (Exists and TTL are sent to
// the master like the writes: a replica may lag).
func TestClusterReadsFromReplicasReadsMasters(t *testing.T) {
	c := redistest.SharedCluster(t)
	redissuite.ReadsOnMasters(t, c, "replicareads:", func() redissuite.Store {
		client := c.NewClient(t, func(o *rueidis.ClientOption) {
			// rueidis' usual setting; seeded with one node, so that it
			// opens its connections to replicas as such (READONLY)
			o.SendToReplicas = func(cmd rueidis.Completed) bool { return cmd.IsReadOnly() }
			o.InitAddress = o.InitAddress[:1]
		})
		return newStore(t, client, redis.WithPrefix("replicareads:"))
	})
}

// TestClusterReadsFromReplicasQueuesOnMasters: with a client that sends
// the read-only commands to replicas (SendToReplicas; rueidis flags
// SSUBSCRIBE read-only), a queued acquisition's subscription is on the
// slot's master all the same, where the release looks for it: the
// release hands the lock to the waiter, and nobody who asks after the
// release takes it first.
func TestClusterReadsFromReplicasQueuesOnMasters(t *testing.T) {
	c := redistest.SharedCluster(t)
	redissuite.QueuesOnMasters(t, c, "queuesonmasters:", func() redissuite.Store {
		client := c.NewClient(t, func(o *rueidis.ClientOption) {
			o.SendToReplicas = func(cmd rueidis.Completed) bool { return cmd.IsReadOnly() }
			o.InitAddress = o.InitAddress[:1]
		})
		return newStore(t, client, redis.WithPrefix("queuesonmasters:"))
	})
}
