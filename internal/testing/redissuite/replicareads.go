package redissuite

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// ReadsOnMasters checks that s, a store on a client of the cluster c that
// may send reads to replicas (go-redis' ReadOnly, rueidis'
// SendToReplicas), sends its reads to the masters all the same, as the
// package documentation promises (a replica may lag): the replicas of the
// slots it uses serve none of the read commands the store sends — they
// only apply the masters' writes — while it takes, reads and releases a
// lock and a permit. newStore makes the store once the replicas are
// ready to serve reads (the clients learn that when they connect).
func ReadsOnMasters(t *testing.T, c *redistest.Cluster, prefix string, newStore func() Store) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	resources := []string{"reads-a", "reads-b", "reads-c"}
	replicas := map[string]*redistest.Server{}
	for _, r := range resources {
		// the lock, its permits, waiters and fence counter share its slot
		master := warmSlot(t, c, redisstore.LockKey(prefix, r))
		rep := c.ReplicaOf(t, master)
		replicas[rep.Addr()] = rep
	}
	replicasOnline(t, c)
	s := newStore()
	before := map[string]map[string]int64{}
	for addr, rep := range replicas {
		before[addr] = readCalls(t, rep)
	}
	for _, r := range resources {
		if _, err := s.AcquireFenced(ctx, r, "tok~reader", time.Minute); err != nil {
			t.Fatalf("AcquireFenced(%s) = %v", r, err)
		}
		if held, err := s.Exists(ctx, r); err != nil || !held {
			t.Errorf("Exists(%s) of a lock just taken = %v, %v; want true", r, held, err)
		}
		if who, held, err := s.Holder(ctx, r); err != nil || !held || who != "reader" {
			t.Errorf("Holder(%s) of a lock just taken = %q, %v, %v; want reader, true", r, who, held, err)
		}
		if ttl, held, err := s.TTL(ctx, r); err != nil || !held || ttl <= 0 {
			t.Errorf("TTL(%s) of a lock just taken = %v, %v, %v; want held", r, ttl, held, err)
		}
		if _, ok, err := s.LastFence(ctx, r); err != nil || !ok {
			t.Errorf("LastFence(%s) after a fenced acquisition = %v, %v; want a counter", r, ok, err)
		}
		if err := s.Release(ctx, r, "tok~reader"); err != nil {
			t.Errorf("Release(%s) = %v", r, err)
		}
		if held, err := s.Exists(ctx, r); err != nil || held {
			t.Errorf("Exists(%s) of a lock just released = %v, %v; want false", r, held, err)
		}
		if err := s.WaitRelease(ctx, r); err != nil {
			t.Errorf("WaitRelease(%s) of a free lock = %v", r, err)
		}
		if _, err := s.AcquirePermit(ctx, r, "tok", 2, time.Minute); err != nil {
			t.Errorf("AcquirePermit(%s) = %v", r, err)
		}
		if err := s.WaitPermit(ctx, r); err != nil {
			t.Errorf("WaitPermit(%s) with a permit free = %v", r, err)
		}
		if err := s.ReleasePermit(ctx, r, "tok"); err != nil {
			t.Errorf("ReleasePermit(%s) = %v", r, err)
		}
	}
	for addr, rep := range replicas {
		after := readCalls(t, rep)
		for cmd, n := range after {
			if n > before[addr][cmd] {
				t.Errorf("replica %s served %d %s commands during the test; want 0: the store must read from masters", addr, n-before[addr][cmd], cmd)
			}
		}
	}
}

// QueuesOnMasters checks that s, a store on a client of the cluster c
// that may send reads to replicas, subscribes a queued acquisition on the
// master of its lock's slot, where the release that grants the lock looks
// for it (one on a replica hears the release but is passed over): the
// release hands the lock to the caller in line, before anyone who asks
// later. newStore makes the store once the replicas are ready to serve
// reads.
func QueuesOnMasters(t *testing.T, c *redistest.Cluster, prefix string, newStore func() Store) {
	t.Helper()
	key := redisstore.LockKey(prefix, "q")
	master := warmSlot(t, c, key)
	replicasOnline(t, c)
	s := newStore()
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "q", "tok~a", time.Minute); err != nil {
		t.Fatal(err)
	}
	queued, done := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := s.AcquireQueued(ctx, lock.QueuedAcquisition{Resource: "q", Token: "tok~b", TTL: time.Minute, Wait: 20 * time.Second, Queued: func() { close(queued) }})
		done <- err
	}()
	select {
	case <-queued:
	case err := <-done:
		t.Fatalf("AcquireQueued of a held lock returned before getting in line: %v", err)
	}
	channels, err := master.Do("PUBSUB", "SHARDCHANNELS", redisstore.WaitersOf(key)+":*").AsStrSlice()
	if err != nil || len(channels) != 1 {
		t.Errorf("subscriptions to releases on the slot's master %s = %q, %v; want the queued acquisition's", master.Addr(), channels, err)
	}
	if err := s.Release(ctx, "q", "tok~a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, "q", "tok~c", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire(q) right after the release = %v; want ErrNotAcquired: the release hands the lock to the caller in line", err)
	}
	if err := <-done; err != nil {
		t.Errorf("AcquireQueued = %v; want the lock", err)
	}
	if who, held, err := s.Holder(ctx, "q"); err != nil || !held || who != "b" {
		t.Errorf("Holder(q) = %q, %v, %v; want b, handed the lock by the release", who, held, err)
	}
	if _, err := s.ForceRelease(ctx, "q"); err != nil {
		t.Fatal(err)
	}
}

// warmSlot writes a key beside key (in its slot: key has a hash tag) on
// the master of that slot, and returns that master: Redis 7.0 reports a
// replica "loading" in CLUSTER SHARDS, and clients send it nothing, until
// its master has written something.
func warmSlot(t *testing.T, c *redistest.Cluster, key string) *redistest.Server {
	t.Helper()
	master := c.MasterOf(t, redistest.Slot(key))
	if err := master.Do("SET", key+":warm", "x", "PX", "60000").Error(); err != nil {
		t.Fatalf("SET on %s = %v", master.Addr(), err)
	}
	return master
}

// replicasOnline writes to every master (keys in 32 slots reach the three
// of the test cluster) and waits until no node reports a replica still
// loading (see warmSlot).
func replicasOnline(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	for i := range 32 {
		warmSlot(t, c, fmt.Sprintf("{redissuite-warm%d}", i))
	}
	eventually(t, "every replica reported online", func() bool {
		for _, n := range c.Nodes {
			shards, err := n.Do("CLUSTER", "SHARDS").ToAny()
			if err == nil && strings.Contains(fmt.Sprint(shards), "health:loading") {
				return false // a node that does not answer (stopped by a fault test) is left out
			}
		}
		return true
	})
}

// readCalls returns how many times srv has been sent (and served or
// rejected) each command that reads
// without writing, or runs a script (a replica applies its master's
// writes, not its scripts, so it serves none of these for a store that
// talks to masters only), from its INFO commandstats.
func readCalls(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats").ToString()
	if err != nil {
		t.Fatalf("INFO commandstats on %s = %v", srv.Addr(), err)
	}
	calls := map[string]int64{}
	for _, cmd := range []string{"type", "get", "pttl", "exists", "evalsha", "eval", "time", "llen", "lrange", "zcard", "zrange"} {
		calls[cmd] = 0
	}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if _, tracked := calls[name]; !ok || !tracked {
			continue
		}
		for _, field := range strings.Split(stats, ",") {
			key, n, _ := strings.Cut(field, "=")
			if key != "calls" && key != "rejected_calls" {
				continue // a replica rejects a read (MOVED) on a connection without READONLY
			}
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatalf("INFO commandstats on %s: %q: %v", srv.Addr(), line, err)
			}
			calls[name] += v
		}
	}
	return calls
}
