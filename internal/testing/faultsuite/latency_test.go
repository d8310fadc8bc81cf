package faultsuite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// slowClient is a backend whose client 0 reaches the servers through
// proxies that delay its replies by latency, while the other clients
// connect directly: the slow client's lock was set on the servers long
// before it hears of it, and its validity must account for that.
//
// The clients pipeline every command (AlwaysPipelining): with rueidis's
// defaults, a call on an idle connection that times out closes it, and
// reconnecting through the slow link takes several slow round trips.
func (s *scenario) slowClient(name string, servers []*redistest.Server, latency time.Duration, storeTimeout time.Duration) *backend {
	s.clientOptions = func(o *rueidis.ClientOption) { o.AlwaysPipelining = true }
	prefix := s.prefix()
	direct := make([]string, len(servers))
	slow := make([]string, len(servers))
	for i, srv := range servers {
		direct[i] = srv.Addr()
		p := s.proxy(srv.Addr())
		s.onSlow(func() { p.Set(faultproxy.ToClient, faultproxy.Delay(latency, 0)) })
		slow[i] = p.Addr()
	}
	fast := s.redisBackendAt(name, servers, direct, prefix)
	lagging := s.redisBackendAt(name, servers, slow, prefix)
	b := *fast
	b.stores = func(client int) []lock.Store {
		if client == 0 {
			return lagging.stores(client)
		}
		return fast.stores(client)
	}
	if len(servers) > 1 {
		b.opts.StoreTimeout = storeTimeout
	}
	return &b
}

// Validity accounting under latency: one client's replies arrive 10% to
// 110% of the TTL late, while another client's arrive at once. Its validity must shrink by that much (at 110%
// there is none left: the lock is refused and released), so that no
// validity outlives the servers' TTL and no two claims overlap.
func TestValidityUnderLatency(t *testing.T) {
	const ttl = time.Second
	for _, n := range []int{1, 3} {
		for _, pct := range []int{10, 50, 90, 110} {
			name := "redis"
			if n > 1 {
				name = fmt.Sprintf("redlock-%d", n)
			}
			t.Run(fmt.Sprintf("%s/%dpct", name, pct), func(t *testing.T) {
				s := begin(t, fmt.Sprintf("validity-latency-%dpct", pct), name)
				latency := ttl * time.Duration(pct) / 100
				b := s.slowClient(name, s.redisServers(n), latency, 2*ttl)
				// Each client takes up to two locks (the fast one naps
				// after each, then stops), within four seconds.
				cfg := b.config(2, ttl, 50*time.Millisecond, 4*time.Second)
				cfg.LocksPerWorker = 2
				lockers := b.prebuilt(t, 2)
				cfg.NewLocker = func(i int) (lock.Locker, func(), error) {
					l, c, err := lockers(i)
					if i == 1 {
						// The fast client naps after each release, so that the
						// slow one, which hears of releases late, gets turns.
						l = napAfterUnlock{l, ttl}
					}
					return l, c, err
				}
				s.slowDown()
				cfg.LockTimeout = 4 * ttl
				rep, res := s.run(cfg)
				slowOK := 0
				for _, op := range res.Recorder.Ops() {
					if op.Client == 0 && op.Kind == contention.KindAcquire && op.Outcome == contention.OK {
						slowOK++
					}
				}
				rep.Add("slow_client_locks", fmt.Sprint(slowOK))
				if rep.ValidityChecked == 0 || rep.Acquisitions == 0 {
					t.Errorf("no lock was checked against the servers: %s", rep.Line())
				}
				// At 90% only 88ms of validity is left when the reply comes:
				// whether the lock is still valid then depends on the load.
				if pct <= 50 && slowOK == 0 {
					t.Errorf("the slow client got no lock, so its validity was never checked: %s", rep.Line())
				}
				if pct > 100 && slowOK > 0 {
					t.Errorf("the client whose replies come after the TTL got %d locks; want none (no validity left)", slowOK)
				}
				s.finish(rep, ttl+time.Second, b.count)
			})
		}
	}
}

// Slow nodes: two of five Redlock nodes answer late — within the store
// timeout, or beyond it. The lock is granted by the others, and its
// validity still holds against the servers.
func TestSlowNodes(t *testing.T) {
	for _, c := range []struct {
		name            string
		latency, jitter time.Duration
	}{
		{"slow-nodes-within-timeout", 40 * time.Millisecond, 30 * time.Millisecond},
		{"slow-nodes-beyond-timeout", 2 * multiTimeout, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := begin(t, c.name, "redlock-5")
			servers := s.redisServers(5)
			addrs := make([]string, len(servers))
			for i, srv := range servers {
				addrs[i] = srv.Addr()
				if i >= 3 {
					p := s.proxy(srv.Addr())
					s.onSlow(func() { p.Set(faultproxy.ToServer|faultproxy.ToClient, faultproxy.Delay(c.latency, c.jitter)) })
					addrs[i] = p.Addr()
				}
			}
			b := s.redisBackendAt("redlock-5", servers, addrs, s.prefix())
			cfg := b.config(4, time.Second, 5*time.Millisecond, 2*time.Second)
			cfg.NewLocker = b.prebuilt(t, 4)
			s.slowDown()
			cfg.Resources = []string{"a", "b"}
			cfg.LockTimeout = 2 * time.Second
			rep, _ := s.run(cfg)
			if rep.Acquisitions < 4 {
				t.Errorf("too few locks with a majority of healthy nodes: %s", rep.Line())
			}
			s.finish(rep, 2*time.Second, b.count)
		})
	}
}

// Split votes with jitter: six clients, each reaching each of five nodes
// over its own link with random latency, contend for one resource, so
// attempts often split the votes. Every client must still get its locks.
func TestSplitVotesWithJitter(t *testing.T) {
	const clients, locks = 6, 5
	s := begin(t, "split-votes-jitter", "redlock-5")
	servers := s.redisServers(5)
	prefix := s.prefix()
	perClient := make([]*backend, clients)
	for c := range perClient {
		addrs := make([]string, len(servers))
		for i, srv := range servers {
			p := s.proxy(srv.Addr())
			s.onSlow(func() {
				p.Set(faultproxy.ToServer|faultproxy.ToClient, faultproxy.Delay(3*time.Millisecond, 3*time.Millisecond))
			})
			addrs[i] = p.Addr()
		}
		perClient[c] = s.redisBackendAt("redlock-5", servers, addrs, prefix)
	}
	b := *perClient[0]
	b.stores = func(client int) []lock.Store { return perClient[client].stores(client) }
	cfg := b.config(clients, time.Second, 5*time.Millisecond, 0)
	cfg.NewLocker = b.prebuilt(t, clients)
	s.slowDown()
	cfg.LocksPerWorker = locks
	cfg.LockTimeout = 30 * time.Second
	rep, res := s.run(cfg)
	attempts := 0
	for _, op := range res.Recorder.Ops() {
		if op.Kind == contention.KindAcquire {
			attempts++
		}
	}
	rep.Add("clients_finished", fmt.Sprint(rep.Acquisitions/locks))
	if rep.Acquisitions != clients*locks || rep.Unknown != 0 {
		t.Errorf("want every client to get its %d locks, each Lock call succeeding: %s (%d calls)", locks, rep.Line(), attempts)
	}
	s.finish(rep, 2*time.Second, b.count)
}

// Replies lost after the server applied the command: the link drops the
// server's replies for 200ms at a time. Acquisitions and releases in
// those windows take effect without the client knowing; the lockers
// release by token, so no key is left behind — checked long before the
// TTL could have cleaned up.
func TestReplyLostAfterApply(t *testing.T) {
	for _, n := range []int{1, 3} {
		name := "redis"
		if n > 1 {
			name = fmt.Sprintf("redlock-%d", n)
		}
		t.Run(name, func(t *testing.T) {
			s := begin(t, "reply-lost-after-apply", name)
			servers := s.redisServers(n)
			p := s.proxy(servers[0].Addr())
			addrs := make([]string, n)
			for i, srv := range servers {
				addrs[i] = srv.Addr()
			}
			addrs[0] = p.Addr()
			const ttl = 5 * time.Second
			b := s.redisBackendAt(name, servers, addrs, s.prefix())
			// Cleanups must reach the server, reconnecting after the reset
			// even on a loaded machine.
			b.opts.StoreTimeout = 2 * time.Second
			cfg := b.config(3, ttl, 10*time.Millisecond, 3*time.Second)
			cfg.LockTimeout = 2 * time.Second
			for i := range 3 {
				cfg.Faults = append(cfg.Faults, contention.Fault{
					Name: "drop replies", At: time.Duration(300+700*i) * time.Millisecond, For: 200 * time.Millisecond,
					Inject: func() error { p.Set(faultproxy.ToClient, faultproxy.Drop()); return nil },
					Heal:   func() error { p.Set(faultproxy.ToClient, faultproxy.Pass()); return nil },
				})
			}
			rep, _ := s.run(cfg)
			if !rep.Recovered || rep.Acquisitions == 0 {
				t.Errorf("the workload did not recover from lost replies: %s", rep.Line())
			}
			// Orphans: keys left once the run is over, far within the TTL.
			rep = s.finish(rep, 500*time.Millisecond, b.count)
			if rep.Residue != 0 {
				t.Errorf("%d keys left behind by lost replies, within the TTL", rep.Residue)
			}
		})
	}
}

// napAfterUnlock is a locker whose Unlock sleeps a while after releasing.
type napAfterUnlock struct {
	lock.Locker
	nap time.Duration
}

func (n napAfterUnlock) Unlock(ctx context.Context, l lock.Lock) error {
	err := n.Locker.Unlock(ctx, l)
	time.Sleep(n.nap)
	return err
}
