package faultsuite_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// waitReplicas is the WithWaitReplicas setting of the cluster scenarios:
// one replica, within a timeout below the lockers' store timeout.
func waitReplicas() redis.Option { return redis.WithWaitReplicas(1, 100*time.Millisecond) }

// A coordinated failover (CLUSTER FAILOVER: the replica catches up with
// its master before taking over) of the slot of the contended resource,
// while four clients contend for it — without and with WithWaitReplicas.
// The promoted replica has every lock, so nothing is granted twice.
func TestClusterFailover(t *testing.T) {
	for _, wait := range []bool{false, true} {
		backend := "redis-cluster"
		if wait {
			backend = "redis-cluster-wait-replicas"
		}
		t.Run(backend, func(t *testing.T) {
			c := sharedCluster(t)
			s := begin(t, "cluster-failover", backend)
			var opts []redis.Option
			if wait {
				opts = append(opts, waitReplicas())
			}
			b, _ := s.clusterBackend(c, opts...)
			b.name = backend
			cfg := b.config(4, time.Second, 5*time.Millisecond, 3*time.Second)
			cfg.Resources = []string{"a"}
			cfg.Faults = []contention.Fault{{
				Name: "cluster failover", At: 500 * time.Millisecond,
				Inject: func() error { _, err := c.FailoverSlot(redistest.Slot("{a}")); return err },
			}}
			rep, _ := s.run(cfg)
			if !rep.Recovered || rep.Acquisitions < 10 {
				t.Errorf("want locks granted before and after the failover: %s", rep.Line())
			}
			s.finish(rep, b.count)
		})
	}
}

// The scenarios that break a cluster run on one of their own, so the
// shared cluster stays healthy for the others.
func TestClusterFaultsThatBreakIt(t *testing.T) {
	c := redistest.StartCluster(t)
	// Each failover below kills a different master.
	slots := []int{redistest.Slot("{a}"), -1}
	first := c.MasterOf(t, slots[0])
	for _, k := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		if c.MasterOf(t, redistest.Slot("{"+k+"}")) != first {
			slots[1] = redistest.Slot("{" + k + "}")
			break
		}
	}
	t.Run("clusterdown", func(t *testing.T) { testClusterDown(t, c) })
	t.Run("failover-without-wait", func(t *testing.T) { testFailoverLosingWrites(t, c, slots[0], false) })
	t.Run("failover-with-wait", func(t *testing.T) { testFailoverLosingWrites(t, c, slots[1], true) })
}

// A failover that loses writes: the link from the master to its replica
// is cut (and the replica stopped, so it cannot reconnect), a client takes
// a lock on the master, the master dies, and the replica takes over
// (CLUSTER FAILOVER TAKEOVER) without the lock; the old master comes
// back empty, as its replica. Without WAIT, another
// client takes the lock again while the first holds it: the positive
// control "failover without WAIT". With WithWaitReplicas the first
// acquisition waits for a replica, fails, and nothing is granted twice.
func testFailoverLosingWrites(t *testing.T, c *redistest.Cluster, slot int, wait bool) {
	name, backend := "control-failover-without-wait", "redis-cluster"
	if wait {
		name, backend = "failover-losing-writes", "redis-cluster-wait-replicas"
	}
	s := begin(t, name, backend)
	s.control = !wait
	s.grown = true // the fixture's admin clients reconnect
	var opts []redis.Option
	if wait {
		opts = append(opts, waitReplicas())
	}
	b, _ := s.clusterBackend(c, opts...)
	rec := contention.NewRecorder()
	first, second := rec.Locker(0, b.locker(t, 0)), rec.Locker(1, b.locker(t, 1))
	resource := resourceInSlot(t, slot)
	master := c.MasterOf(t, slot)
	replica := c.ReplicaOf(t, master)
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := master.Do("CLIENT", "KILL", "TYPE", "replica").Error(); err != nil {
		t.Fatalf("cutting the replication link: %v", err)
	}
	held, err := first.TryLock(s.ctx, resource, 30*time.Second)
	switch {
	case wait && !errors.Is(err, redis.ErrNotReplicated):
		t.Errorf("TryLock with the replica cut off, waiting for it = %v; want ErrNotReplicated", err)
	case !wait && err != nil:
		t.Fatalf("TryLock = %v", err)
	}
	master.Kill()
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Do("CLUSTER", "FAILOVER", "TAKEOVER").Error(); err != nil {
		t.Fatalf("CLUSTER FAILOVER TAKEOVER: %v", err)
	}
	// The old master comes back, empty, and rejoins as the new master's
	// replica (with WAIT, the new master grants nothing until it has one).
	if err := master.Restart(); err != nil {
		t.Fatal(err)
	}
	// The second client finds the new master (its first calls fail on
	// the dead one) and takes the lock.
	var other lock.Lock
	eventually(t, 30*time.Second, "the second client reaches the promoted replica", func() bool {
		other, err = second.TryLock(s.ctx, resource, 30*time.Second)
		return err == nil || errors.Is(err, lock.ErrNotAcquired)
	})
	if err != nil {
		t.Errorf("the second client's TryLock on the promoted replica = %v; want the lock (the replica never had the first's)", err)
	} else {
		time.Sleep(holdFor) // the second holder's critical section
		_ = second.Unlock(s.ctx, other)
	}
	if held.Token != "" {
		_ = first.Unlock(s.ctx, held)
	}
	rep := contention.Analyze(name, backend, rec)
	s.finish(rep, b.count)
}

// resourceInSlot returns a resource name whose key lands in slot.
func resourceInSlot(t *testing.T, slot int) string {
	t.Helper()
	for i := range 1 << 20 {
		r := "r" + strconv.Itoa(i)
		if redistest.Slot("{"+r+"}") == slot {
			return r
		}
	}
	t.Fatalf("no resource name for slot %d", slot)
	return ""
}

// CLUSTERDOWN (the slot of the resource is served by no node) is a
// failure of the store, reported as such — lock.ErrUnavailable, an
// unknown outcome — never as contention, which would make callers wait
// for a release that never comes.
func testClusterDown(t *testing.T, c *redistest.Cluster) {
	s := begin(t, "clusterdown-is-an-error", "redis-cluster")
	b, _ := s.clusterBackend(c)
	rec := contention.NewRecorder()
	l := rec.Locker(0, b.locker(t, 0))
	slot := redistest.Slot("{down}")
	owner := c.MasterOf(t, slot)
	slotArg := strconv.Itoa(slot)
	for _, n := range c.Nodes {
		if err := n.Do("CLUSTER", "DELSLOTS", slotArg).Error(); err != nil {
			t.Logf("CLUSTER DELSLOTS on %s: %v", n.Name, err)
		}
	}
	var errs []error
	eventually(t, 10*time.Second, "the cluster reports the slot down", func() bool {
		_, err := l.TryLock(s.ctx, "down", time.Second)
		errs = append(errs, err)
		return err != nil && strings.Contains(err.Error(), "CLUSTERDOWN")
	})
	for range 5 {
		_, err := l.TryLock(s.ctx, "down", time.Second)
		errs = append(errs, err)
	}
	if err := owner.Do("CLUSTER", "ADDSLOTS", slotArg).Error(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTS: %v", err)
	}
	c.WaitHealthy(t)
	checkFailures(t, errs)
	rep := contention.Analyze("clusterdown-is-an-error", "redis-cluster", rec)
	rep.Add("failed_calls", fmt.Sprint(len(errs)))
	s.finish(rep, b.count)
}

// WRONGTYPE (the lock key holds a list some other program wrote) is a
// failure of the store, never contention, on every Redis backend.
func TestWrongType(t *testing.T) {
	for _, name := range []string{"redis", "redlock-3", "redis-cluster"} {
		t.Run("wrongtype/"+name, func(t *testing.T) {
			var c *redistest.Cluster
			if name == "redis-cluster" {
				c = sharedCluster(t)
			}
			s := begin(t, "wrongtype-is-an-error", name)
			var b *backend
			var prefix string
			var put, del func() error
			switch name {
			case "redis-cluster":
				b, prefix = s.clusterBackend(c)
				master := c.MasterOf(t, redistest.Slot("{r}"))
				put = func() error { return master.Do("LPUSH", redisKey(prefix, "r"), "x").Error() }
				del = func() error { return master.Do("DEL", redisKey(prefix, "r")).Error() }
			default:
				n := 1
				if name == "redlock-3" {
					n = 3
				}
				servers := s.redisServers(n)
				b, prefix = s.redisBackend(name, servers)
				each := func(cmd string, args ...string) func() error {
					return func() error {
						for _, srv := range servers {
							if err := srv.Do(append([]string{cmd, redisKey(prefix, "r")}, args...)...).Error(); err != nil {
								return err
							}
						}
						return nil
					}
				}
				put, del = each("LPUSH", "x"), each("DEL")
			}
			if err := put(); err != nil {
				t.Fatal(err)
			}
			rec := contention.NewRecorder()
			l := rec.Locker(0, b.locker(t, 0))
			var errs []error
			for range 5 {
				_, err := l.TryLock(s.ctx, "r", time.Second)
				errs = append(errs, err)
			}
			_, err := l.Lock(s.ctx, "r", time.Second, lock.WithRetry(lock.Retry{Attempts: 3, Delay: 5 * time.Millisecond}))
			errs = append(errs, err)
			checkFailures(t, errs)
			for _, err := range errs {
				if !strings.Contains(err.Error(), "WRONGTYPE") {
					t.Errorf("error %q does not say WRONGTYPE", err)
				}
			}
			rep := contention.Analyze("wrongtype-is-an-error", name, rec)
			rep.Add("failed_calls", fmt.Sprint(len(errs)))
			// The list is not a lock: remove it, then count what the
			// lockers left.
			if err := del(); err != nil {
				t.Fatal(err)
			}
			s.finish(rep, b.count)
		})
	}
}

// checkFailures asserts that every error is a store failure: an unknown
// outcome (lock.ErrUnavailable), never contention.
func checkFailures(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		switch {
		case err == nil:
			t.Errorf("call %d succeeded; want a failure", i)
		case errors.Is(err, lock.ErrNotAcquired):
			t.Errorf("call %d reported contention: %v", i, err)
		case !errors.Is(err, lock.ErrUnavailable) || contention.Classify(err) != contention.Unknown:
			t.Errorf("call %d = %v; want lock.ErrUnavailable", i, err)
		}
	}
}
