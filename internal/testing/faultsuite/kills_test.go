package faultsuite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// A minority of the nodes is killed mid-run and restarted, empty, after
// a delay longer than the TTL — the operational remedy for servers
// without persistence. The lock stays available on the majority, and
// nothing it granted is granted twice.
func TestMinorityKilledRestartedAfterDelay(t *testing.T) {
	t.Run("redlock-5", func(t *testing.T) {
		const ttl = time.Second
		s := begin(t, "minority-killed-restarted-after-delay", "redlock-5")
		servers := s.redisServers(5)
		b, _ := s.redisBackend("redlock-5", servers)
		cfg := b.config(6, ttl, 5*time.Millisecond, 3*time.Second)
		cfg.Resources = []string{"a", "b"}
		victims := servers[3:]
		cfg.Faults = []contention.Fault{{
			Name: "kill 2 of 5", At: 500 * time.Millisecond, For: ttl + 500*time.Millisecond,
			Inject: func() error {
				for _, v := range victims {
					v.Kill()
				}
				return nil
			},
			Heal: func() error { return restartAll(victims) },
		}}
		rep, _ := s.run(cfg)
		if !(rep.FaultSuccess > 0) || !rep.Recovered {
			t.Errorf("want locks granted by the majority during the fault, and after it: %s", rep.Line())
		}
		s.finish(rep, b.count)
	})
	t.Run("memcache-quorum-3", func(t *testing.T) {
		const ttl = 2 * time.Second
		s := begin(t, "minority-killed-restarted-after-delay", "memcache-quorum-3")
		servers := s.memcacheServers(3, nil)
		b, _ := s.memcacheBackend("memcache-quorum-3", servers)
		cfg := b.config(6, ttl, 5*time.Millisecond, 4*time.Second)
		cfg.Resources = []string{"a", "b"}
		cfg.Faults = []contention.Fault{{
			Name: "kill 1 of 3", At: 500 * time.Millisecond, For: ttl + 500*time.Millisecond,
			Inject: func() error { servers[2].Kill(); return nil },
			Heal:   func() error { return servers[2].Restart() },
		}}
		rep, _ := s.run(cfg)
		if !(rep.FaultSuccess > 0) || !rep.Recovered {
			t.Errorf("want locks granted by the majority during the fault, and after it: %s", rep.Line())
		}
		s.finish(rep, b.count)
	})
}

func restartAll(servers []*redistest.Server) error {
	var errs []error
	for _, srv := range servers {
		errs = append(errs, srv.Restart())
	}
	return errors.Join(errs...)
}

// A majority of the nodes is down — killed, or paused (SIGSTOP) — for a
// while. No lock can be granted, and no call hangs: each Lock gives up
// at its deadline with an error, never ErrNotAcquired for a dead store;
// locks come back once the nodes do.
func TestMajorityDown(t *testing.T) {
	for _, how := range []string{"killed", "paused"} {
		t.Run(how, func(t *testing.T) {
			const ttl, lockTimeout = time.Second, 500 * time.Millisecond
			s := begin(t, "majority-"+how, "redlock-5")
			servers := s.redisServers(5)
			b, _ := s.redisBackend("redlock-5", servers)
			cfg := b.config(4, ttl, 5*time.Millisecond, 3*time.Second)
			cfg.LockTimeout = lockTimeout
			victims := servers[:3]
			inject, heal := func() error {
				for _, v := range victims {
					v.Kill()
				}
				return nil
			}, func() error { return restartAll(victims) }
			if how == "paused" {
				inject = func() error {
					for _, v := range victims {
						if err := v.Pause(); err != nil {
							return err
						}
					}
					return nil
				}
				heal = func() error {
					var errs []error
					for _, v := range victims {
						errs = append(errs, v.Resume())
					}
					return errors.Join(errs...)
				}
			}
			cfg.Recorder = contention.NewRecorder()
			// From when the last victim went down to when the first
			// comes back.
			var injected, healing time.Duration
			cfg.Faults = []contention.Fault{{
				Name: "majority " + how, At: 500 * time.Millisecond, For: ttl + 500*time.Millisecond,
				Inject: func() error { err := inject(); injected = cfg.Recorder.Now(); return err },
				Heal:   func() error { healing = cfg.Recorder.Now(); return heal() },
			}}
			rep, res := s.run(cfg)
			longest, during, granted := time.Duration(0), 0, 0
			for _, op := range res.Recorder.Ops() {
				if op.Kind != contention.KindAcquire {
					continue
				}
				longest = max(longest, op.End-op.Start)
				// Calls that began once the majority was down and ended
				// before it was healed cannot have had a quorum.
				if op.Start > injected && op.End < healing {
					during++
					if op.Outcome == contention.OK {
						granted++
					}
					if errors.Is(op.Err, lock.ErrNotAcquired) {
						t.Errorf("a Lock call with a majority %s reported contention: %v", how, op.Err)
					}
				}
			}
			rep.AddMillis("longest_call_ms", longest)
			// A call may run over its deadline by one store timeout
			// (the stores' answers it waits for) and a release round.
			if bound := lockTimeout + 4*multiTimeout + time.Second; longest > bound {
				t.Errorf("a Lock call took %v with a majority %s; want it bounded by its deadline (%v, and a bit)", longest, how, bound)
			}
			if during == 0 || granted != 0 || !rep.Recovered {
				t.Errorf("want calls during the fault, none granted, and locks again after it: %d calls, %d granted; %s", during, granted, rep.Line())
			}
			s.finish(rep, b.count)
		})
	}
}

// partitioned is a store that cannot be reached: every call fails, as
// with a network partition between the client and a node.
type partitioned struct{ name string }

var errPartitioned = errors.New("no route to host (partitioned)")

func (p partitioned) Acquire(context.Context, string, string, time.Duration) error {
	return errPartitioned
}
func (p partitioned) Release(context.Context, string, string) error { return errPartitioned }
func (p partitioned) Exists(context.Context, string) (bool, error)  { return false, errPartitioned }
func (p partitioned) String() string                                { return p.name }

// restartCase is one way a node can come back in the restart scenarios.
type restartCase struct {
	scenario string
	backend  string
	control  bool                              // violations expected
	guard    bool                              // WithRestartGuard
	restart  func(srv *redistest.Server) error // the fault
}

// Restart without persistence, on Redlock. Three masters; a partition
// lets client A reach nodes 0 and 1 only, client B nodes 1 and 2 only, so
// both need node 1 for a majority. A takes the lock; node 1 restarts;
// B tries while A's lock is valid:
//   - restarted empty at once, no guard: node 1 forgot A's lock and votes
//     for B — two holders (the positive control "restart without delay");
//   - restarted empty with WithRestartGuard: node 1 refuses until a
//     maximum TTL has passed — B gets no majority;
//   - restarted with its data (persistence): node 1 still holds A's lock;
//   - restarted after a delay longer than the TTL: A's lock has expired
//     by the time B can try, so nothing is granted twice.
//
// The same with one Redis server and no partition: a single server that
// restarts empty lets anyone take every lock it held (the documented
// hazard of a single node without persistence), unless guarded.
func TestRestartWithoutPersistence(t *testing.T) {
	const ttl = time.Second
	immediate := func(srv *redistest.Server) error { return srv.Restart() }
	cases := []restartCase{
		{"control-restart-without-delay", "redlock-3", true, false, immediate},
		{"restart-guard", "redlock-3-guarded", false, true, immediate},
		{"restart-persisted", "redlock-3", false, false, func(srv *redistest.Server) error { return srv.RestartPersisted() }},
		{"restart-after-delay", "redlock-3", false, false, func(srv *redistest.Server) error { return srv.RestartAfter(ttl + 100*time.Millisecond) }},
		{"control-single-restart-without-persistence", "redis", true, false, immediate},
		{"restart-guard", "redis-guarded", false, true, immediate},
	}
	for _, c := range cases {
		t.Run(c.scenario+"/"+c.backend, func(t *testing.T) {
			var s *scenario
			if c.control {
				s = beginControl(t, c.scenario, c.backend)
			} else {
				s = begin(t, c.scenario, c.backend)
			}
			single := c.backend == "redis" || c.backend == "redis-guarded"
			n := 3
			if single {
				n = 1
			}
			servers := s.redisServers(n)
			var opts []redis.Option
			if c.guard {
				opts = append(opts, redis.WithRestartGuard(ttl))
			}
			prefix := s.prefix()
			mk := func(reach ...int) lock.Locker {
				stores := make([]lock.Store, n)
				for i, srv := range servers {
					stores[i] = partitioned{fmt.Sprintf("redis-%d (partitioned)", i)}
					for _, r := range reach {
						if r == i {
							st, err := redis.New(s.redisClient(srv.Addr()), append([]redis.Option{redis.WithPrefix(prefix), redis.WithName(fmt.Sprintf("redis-%d", i))}, opts...)...)
							if err != nil {
								t.Fatal(err)
							}
							stores[i] = st
						}
					}
				}
				if single {
					l, err := lock.NewSingle(stores[0], nil)
					if err != nil {
						t.Fatal(err)
					}
					return l
				}
				l, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: multiTimeout})
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			rec := contention.NewRecorder()
			victim := servers[0]
			var rawA, rawB lock.Locker
			if single {
				rawA, rawB = mk(0), mk(0)
			} else {
				rawA, rawB = mk(0, 1), mk(1, 2)
				victim = servers[1]
			}
			a, bl := rec.Locker(0, rawA), rec.Locker(1, rawB)
			if c.guard {
				warmGuard(t, s.ctx, rawA, rawB)
			}
			const rounds = 3
			bGot := 0
			for round := range rounds {
				resource := fmt.Sprintf("r%d", round)
				held, err := a.Lock(s.ctx, resource, ttl, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 20 * time.Millisecond}))
				if err != nil {
					t.Fatalf("round %d: A's Lock = %v", round, err)
				}
				if err := c.restart(victim); err != nil {
					t.Fatal(err)
				}
				// B tries while A's lock is valid (or, after a delayed
				// restart, once it can reach the node again).
				other, err := tryReconnected(s.ctx, bl, resource, ttl)
				if err == nil {
					bGot++
					time.Sleep(holdFor) // B's critical section
					_ = bl.Unlock(s.ctx, other)
				}
				if held.Valid() && err == nil && !c.control {
					t.Errorf("round %d: B took the lock while A's was valid", round)
				}
				_ = a.Unlock(s.ctx, held)
				if c.guard {
					warmGuard(t, s.ctx, rawA, rawB)
				}
			}
			rep := contention.Analyze(c.scenario, c.backend, rec)
			rep.Add("second_owner_locks", fmt.Sprint(bGot))
			s.finish(rep, func(context.Context) (int, error) { return countRedis(s.nodes(servers), prefix) })
		})
	}
}

// tryReconnected is TryLock, tried again if it failed on connections a
// restart broke (the clients reconnect on their next call).
func tryReconnected(ctx context.Context, l lock.Locker, resource string, ttl time.Duration) (lock.Lock, error) {
	var held lock.Lock
	var err error
	for range 3 {
		held, err = l.TryLock(ctx, resource, ttl)
		if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, redis.ErrRecovering) {
			break
		}
	}
	return held, err
}

// warmGuard waits until guarded nodes grant locks to both clients again.
func warmGuard(t *testing.T, ctx context.Context, ls ...lock.Locker) {
	t.Helper()
	for _, l := range ls {
		eventually(t, 10*time.Second, "the restart guard lets locks through", func() bool {
			held, err := l.TryLock(ctx, "warm", time.Second)
			if err != nil {
				return false
			}
			_ = l.Unlock(ctx, held)
			return true
		})
	}
}

// Extension-time repair: a Redlock over five nodes held by Run (extended
// every 200ms). Two nodes restart empty; the next extensions take the
// lock again on them. Then two other nodes die: the lock is still held by
// a majority — the repaired nodes and the last healthy one — so Run keeps
// it and nobody else can take it.
func TestExtensionRepairsVotes(t *testing.T) {
	const ttl, every = time.Second, 200 * time.Millisecond
	s := begin(t, "extension-repairs-votes", "redlock-5")
	servers := s.redisServers(5)
	b, prefix := s.redisBackend("redlock-5", servers)
	obs := s.nodes(servers)
	rec := contention.NewRecorder()
	holder := rec.Locker(0, b.locker(t, 0))
	other := rec.Locker(1, b.locker(t, 1))
	holding := func(token string) int {
		n := 0
		for _, o := range obs {
			if v, err := o.do("GET", redisKey(prefix, "r")).ToString(); err == nil && v == token {
				n++
			}
		}
		return n
	}
	var lost error
	err := lock.Run(s.ctx, holder, "r", ttl, func(ctx context.Context, l lock.Lock) error {
		eventually(t, 5*time.Second, "the lock is held on all five nodes", func() bool { return holding(l.Token) == 5 })
		if err := restartAll(servers[:2]); err != nil {
			return err
		}
		if n := holding(l.Token); n > 3 {
			t.Errorf("the lock is on %d nodes right after two restarted empty; want 3", n)
		}
		eventually(t, 5*time.Second, "an extension repairs the lock on the restarted nodes", func() bool { return holding(l.Token) == 5 })
		servers[2].Kill()
		servers[3].Kill()
		refused(t, ctx, other, "r", ttl)
		// Two more extensions go through on the three nodes left.
		select {
		case <-time.After(3 * every):
		case <-ctx.Done():
			lost = context.Cause(ctx)
		}
		return nil
	}, lock.ExtendEvery(every))
	if err != nil && !errors.Is(err, lock.ErrUnavailable) { // the final release fails on the dead nodes
		t.Errorf("Run = %v", err)
	}
	if lost != nil {
		t.Errorf("Run lost the lock: %v", lost)
	}
	rep := contention.Analyze("extension-repairs-votes", "redlock-5", rec)
	s.finish(rep, b.count)
}

// Background retries after a grant: two of five nodes reset every
// connection while a lock is taken, so it is granted by three. Once they
// answer again, the locker asks them again in the background — no
// extension needed — and the lock is on all five; two other nodes then
// die, and the lock is still held by a majority.
func TestBackfillAfterTransientFailure(t *testing.T) {
	const ttl = 2 * time.Second
	s := begin(t, "backfill-after-transient-failure", "redlock-5")
	servers := s.redisServers(5)
	addrs := make([]string, 5)
	var proxies []*faultproxy.Proxy
	for i, srv := range servers {
		addrs[i] = srv.Addr()
		if i >= 3 {
			p := s.proxy(srv.Addr())
			proxies = append(proxies, p)
			addrs[i] = p.Addr()
		}
	}
	prefix := s.prefix()
	b := s.redisBackendAt("redlock-5", servers, addrs, prefix)
	obs := s.nodes(servers)
	rec := contention.NewRecorder()
	holder := rec.Locker(0, b.locker(t, 0))
	other := rec.Locker(1, b.locker(t, 1))
	holding := func(token string) int {
		n := 0
		for _, o := range obs {
			if v, err := o.do("GET", redisKey(prefix, "r")).ToString(); err == nil && v == token {
				n++
			}
		}
		return n
	}
	for _, p := range proxies {
		p.Refuse(true)
		p.Reset()
	}
	held, err := holder.TryLock(s.ctx, "r", ttl)
	if err != nil {
		t.Fatalf("TryLock with 3 of 5 nodes = %v", err)
	}
	if n := holding(held.Token); n != 3 {
		t.Fatalf("the lock is on %d nodes right after TryLock; want the 3 reachable ones", n)
	}
	for _, p := range proxies {
		p.Refuse(false)
	}
	eventually(t, 2*time.Second, "background retries take the lock on the nodes that failed", func() bool { return holding(held.Token) == 5 })
	servers[0].Kill()
	servers[1].Kill()
	refused(t, s.ctx, other, "r", ttl)
	// Extend, again if it failed on connections the faults broke.
	var err2 error
	for range 3 {
		if _, err2 = holder.Extend(s.ctx, held, ttl); err2 == nil {
			break
		}
	}
	if err2 != nil {
		t.Errorf("Extend with the lock on 3 of 5 = %v; want nil", err2)
	}
	if err := holder.Unlock(s.ctx, held); err != nil && !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("Unlock = %v", err)
	}
	rep := contention.Analyze("backfill-after-transient-failure", "redlock-5", rec)
	s.finish(rep, b.count)
}

// refused asserts that another owner cannot take resource: its TryLock
// fails — with ErrNotAcquired once its connections, broken by restarts,
// are back.
func refused(t *testing.T, ctx context.Context, l lock.Locker, resource string, ttl time.Duration) {
	t.Helper()
	var err error
	for range 3 {
		var held lock.Lock
		if held, err = l.TryLock(ctx, resource, ttl); err == nil {
			t.Errorf("another owner took %s while a majority held it", resource)
			_ = l.Unlock(ctx, held)
			return
		}
		if errors.Is(err, lock.ErrNotAcquired) {
			return
		}
	}
	t.Errorf("another owner's TryLock(%s) = %v; want ErrNotAcquired", resource, err)
}
