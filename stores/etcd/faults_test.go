package etcd_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/stores/etcd"
)

// The fault tier for etcd: the scenarios of internal/testing/faultsuite,
// which cannot import this module, run here with the same recorder and
// checkers (internal/contention) and the same report lines
// (faultkit.Emit). Each runs on a three-member cluster of its own, with
// workers that each have their own client of every member, next to a
// positive control: a deliberately broken store on which the checkers
// must report violations.

// scenario is one fault scenario: its cluster, its clients (closed
// before the leak check) and its report.
type scenario struct {
	t       *testing.T
	ctx     context.Context
	name    string
	control bool
	cluster *etcdtest.Cluster
	prefix  string
	base    faultkit.GoroutineSet
	mu      sync.Mutex
	closers []func()
	// broken, if set, replaces the store of the workers.
	broken func(s *etcd.Store, c *clientv3.Client) lock.Store
}

func begin(t *testing.T, name string, control bool) *scenario {
	t.Helper()
	cluster := etcdtest.Start(t, 3, nil)
	s := &scenario{t: t, name: name, control: control, cluster: cluster, prefix: "faults/", base: faultkit.Goroutines()}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	s.ctx = ctx
	s.onClose(cancel)
	t.Cleanup(s.close)
	return s
}

func (s *scenario) onClose(f func()) {
	s.mu.Lock()
	s.closers = append(s.closers, f)
	s.mu.Unlock()
}

func (s *scenario) close() {
	s.mu.Lock()
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}

// client returns a client of endpoints (default: every member), closed
// with the scenario.
func (s *scenario) client(endpoints ...string) *clientv3.Client {
	s.t.Helper()
	c, err := s.dial(endpoints)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

func (s *scenario) dial(endpoints []string) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		endpoints = s.cluster.Endpoints()
	}
	c, err := newClient(endpoints...)
	if err != nil {
		return nil, fmt.Errorf("client of %v: %w", endpoints, err)
	}
	s.onClose(func() { _ = c.Close() })
	return c, nil
}

// proxies puts a fault proxy, closed with the scenario, in front of every
// member, and returns them and their addresses.
func (s *scenario) proxies() ([]*faultproxy.Proxy, []string) {
	s.t.Helper()
	var proxies []*faultproxy.Proxy
	var addrs []string
	for _, m := range s.cluster.Members {
		p, err := faultproxy.New(m.Addr())
		if err != nil {
			s.t.Fatal(err)
		}
		s.onClose(func() { _ = p.Close() })
		proxies, addrs = append(proxies, p), append(addrs, p.Addr())
	}
	return proxies, addrs
}

// locker returns a locker over a store of the scenario on a new client
// of endpoints (default: every member).
func (s *scenario) locker(endpoints ...string) (lock.Locker, error) {
	c, err := s.dial(endpoints)
	if err != nil {
		return nil, err
	}
	// A leader that dies takes the writes it was replicating with it, and
	// etcd answers them only after 6.2s (its request timeout with these
	// clusters' timing): the bound gives them up sooner.
	es, err := etcd.New(c, etcd.WithPrefix(s.prefix), etcd.WithMinTTL(etcdtest.MinTTL), etcd.WithTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	var store lock.Store = es
	if s.broken != nil {
		store = s.broken(es, c)
	}
	return lock.NewSingle(store, nil)
}

// config is a workload of workers on two resources, each worker with a
// client of its own.
func (s *scenario) config(workers int, ttl, duration time.Duration) contention.Config {
	obs := s.client()
	return contention.Config{
		Workers: workers,
		NewLocker: func(int) (lock.Locker, func(), error) {
			l, err := s.locker()
			return l, nil, err
		},
		Resources: []string{"a", "b"},
		TTL:       ttl,
		Hold:      10 * time.Millisecond,
		Duration:  duration,
		ServerTTL: func(ctx context.Context, l lock.Lock) ([]time.Duration, error) {
			return serverTTL(ctx, obs, s.prefix, l)
		},
	}
}

// serverTTL reads the remaining time of a lock's lease, rounded up to
// whole seconds (etcd reports it rounded down), if its key exists.
func serverTTL(ctx context.Context, c *clientv3.Client, prefix string, l lock.Lock) ([]time.Duration, error) {
	key := etcd.LockKey(prefix, l.Resource, l.Token)
	resp, err := c.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	lease := resp.Kvs[0].Lease
	ttl, err := c.TimeToLive(ctx, clientv3.LeaseID(lease))
	if err != nil {
		return nil, err
	}
	switch {
	case ttl.TTL > ttl.GrantedTTL:
		// Around a change of leader, etcd reports a lease that nobody
		// expires meanwhile as lasting forever (9223372036 s, which
		// overflowed a Duration into a validity "violated" by 292
		// years); the next leader gives it its granted TTL again from
		// when it takes over. Read as the granted TTL from now: no
		// validity the locker reports goes beyond that.
		return []time.Duration{time.Duration(ttl.GrantedTTL+1) * time.Second}, nil
	case ttl.TTL >= 0:
		return []time.Duration{time.Duration(ttl.TTL+1) * time.Second}, nil
	}
	// A leader elected a moment ago may not have applied the lease's grant
	// yet (etcd before 3.5): the read cannot be judged if the key, which
	// goes with its lease, is still there.
	again, err := c.Get(ctx, key)
	if err != nil || (len(again.Kvs) > 0 && again.Kvs[0].Lease == lease) {
		return nil, fmt.Errorf("the leader does not know lease %x of %s, still attached to it", lease, key)
	}
	return nil, nil
}

// run runs a workload; it must not fail.
func (s *scenario) run(cfg contention.Config) (contention.Report, *contention.Result) {
	s.t.Helper()
	res, err := contention.Run(s.ctx, cfg)
	if err != nil {
		s.t.Fatalf("%s: %v", s.name, err)
	}
	ops := res.Recorder.Ops()
	for _, v := range contention.CheckHolders(contention.Claims(ops), res.Limit).Examples {
		s.t.Logf("overlap of %v: %+v and %+v", v.Overlap, v.A, v.B)
	}
	for _, op := range ops {
		if op.Kind == contention.KindServerTTL && op.Outcome == contention.OK && op.ValidUntil > op.ServerExpiry {
			s.t.Logf("validity beyond the server's TTL by %v: %+v", op.ValidUntil-op.ServerExpiry, op)
		}
	}
	return res.Report(s.name, "etcd-3"), res
}

// finish counts what is left in the cluster (keys under the prefix, and
// leases: the cluster is the scenario's own) for up to wait, closes the
// clients, checks for leaked goroutines, emits the report line, and
// asserts: no violation of any kind in a scenario, violations in a
// control, and in both no residue and no leak.
func (s *scenario) finish(rep contention.Report, wait time.Duration) {
	s.t.Helper()
	obs := s.client()
	n, err := faultkit.Residue(s.ctx, wait, func(ctx context.Context) (int, error) {
		k, err := obs.Get(ctx, s.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, err
		}
		l, err := obs.Leases(ctx)
		if err != nil {
			return 0, err
		}
		return int(k.Count) + len(l.Leases), nil
	})
	if err != nil {
		s.t.Errorf("%s: counting what is left: %v", s.name, err)
	}
	rep.Residue = n
	s.close()
	// The cluster's processes are reaped, and their output copied, by
	// goroutines of testserver and os/exec, started anew when a member
	// restarts.
	leaked := s.base.Leaked(10*time.Second, "testserver.", "os/exec.")
	rep.LeakedGoroutines = len(leaked)
	for i, g := range leaked {
		if i == 3 {
			break
		}
		s.t.Logf("leaked goroutine:\n%s", g)
	}
	faultkit.Emit(s.t, rep)
	if s.control {
		if rep.Violations == 0 {
			s.t.Errorf("%s: positive control reported no violation: the checker is blind to a known-unsafe setup", s.name)
		}
		if rep.Residue > 0 || rep.LeakedGoroutines > 0 {
			s.t.Errorf("%s: %d keys or leases left, %d leaked goroutines; want 0", s.name, rep.Residue, rep.LeakedGoroutines)
		}
	} else if bad := rep.Unsafe(); bad != "" {
		s.t.Errorf("%s: %s", s.name, bad)
	}
}

// killLeader is a fault that kills the cluster's leader and restarts it,
// with its data, when healed.
func (s *scenario) killLeader(at, window time.Duration, leaders *[]uint64) contention.Fault {
	var victim *etcdtest.Member
	return contention.Fault{
		Name: "kill the leader", At: at, For: window,
		Inject: func() error {
			l, err := s.cluster.Leader()
			if err != nil {
				return err
			}
			st, err := l.Status(time.Second)
			if err != nil {
				return err
			}
			*leaders = append(*leaders, st.ID)
			victim = l
			victim.Kill()
			return nil
		},
		Heal: func() error { return s.cluster.Restart(victim) },
	}
}

// The leader is killed twice during contention, and restarted with its
// data each time. The survivors elect a new leader within about a second;
// calls under way fail (and are released by token), and then the locks go
// on. Nothing is granted twice, and fences keep increasing across both
// leader changes.
func TestKillLeader(t *testing.T) {
	twins(t, "kill-leader", "control-kill-leader-check-then-put", func(t *testing.T, s *scenario) {
		const ttl = 2 * time.Second
		if s.control {
			s.broken = checkThenPut
		}
		var leaders []uint64
		cfg := s.config(4, ttl, 4500*time.Millisecond)
		cfg.Faults = []contention.Fault{
			s.killLeader(800*time.Millisecond, 1200*time.Millisecond, &leaders),
			s.killLeader(2400*time.Millisecond, 1200*time.Millisecond, &leaders),
		}
		rep, res := s.run(cfg)
		final, err := s.cluster.WaitLeader(5 * time.Second)
		if err == nil {
			st, err := final.Status(time.Second)
			if err == nil {
				leaders = append(leaders, st.ID)
			}
		}
		if len(leaders) != 3 || leaders[0] == leaders[1] || leaders[1] == leaders[2] {
			t.Errorf("leaders before, between and after the kills: %v; want two leader changes", leaders)
		}
		s.checkFences(&rep, res)
		if !s.control && !rep.Recovered {
			t.Errorf("want locks granted after the faults: %s", rep.Line())
		}
		s.finish(rep, ttl+2*time.Second)
	})
}

// A follower is killed and restarted with its data, twice; it catches up
// with the log it missed. Nothing is granted twice, fences keep
// increasing, and the locks go on throughout (a majority lives).
func TestRestartMember(t *testing.T) {
	twins(t, "restart-member", "control-restart-member-check-then-put", func(t *testing.T, s *scenario) {
		const ttl = 2 * time.Second
		if s.control {
			s.broken = checkThenPut
		}
		cfg := s.config(4, ttl, 3500*time.Millisecond)
		var follower *etcdtest.Member
		restart := func(at time.Duration) contention.Fault {
			return contention.Fault{
				Name: "restart a follower", At: at, For: 600 * time.Millisecond,
				Inject: func() error {
					l, err := s.cluster.Leader()
					if err != nil {
						return err
					}
					for _, m := range s.cluster.Members {
						if m != l {
							follower = m
						}
					}
					follower.Kill()
					return nil
				},
				Heal: func() error { return s.cluster.Restart(follower) },
			}
		}
		cfg.Faults = []contention.Fault{restart(700 * time.Millisecond), restart(2 * time.Second)}
		rep, res := s.run(cfg)
		s.checkFences(&rep, res)
		if !s.control && (!(rep.FaultSuccess > 0) || !rep.Recovered) {
			t.Errorf("want locks granted during the restarts (a majority lives) and after them: %s", rep.Line())
		}
		s.finish(rep, ttl+2*time.Second)
	})
}

// twins runs a scenario and its positive control, each on a cluster of
// its own: f sees s.control.
func twins(t *testing.T, name, control string, f func(t *testing.T, s *scenario)) {
	for _, n := range []string{name, control} {
		t.Run(n, func(t *testing.T) { f(t, begin(t, n, n == control)) })
	}
}

// checkFences checks with fenceOrder that the fences of a run increase in
// grant order, adds the figures to rep, and, outside a control, fails the
// test on any pair out of order, or if there was no pair to compare.
func (s *scenario) checkFences(rep *contention.Report, res *contention.Result) {
	s.t.Helper()
	checked, bad := fenceOrder(res.Recorder.Ops())
	rep.Add("fence_pairs_checked", fmt.Sprint(checked))
	rep.Add("fences_out_of_order", fmt.Sprint(len(bad)))
	if s.control {
		return
	}
	for _, b := range bad {
		s.t.Errorf("fences out of order: %s", b)
	}
	if checked == 0 {
		s.t.Errorf("no two locks granted on one resource: no fences to compare: %s", rep.Line())
	}
}

// fenceOrder checks that the fences of the successful acquisitions of
// each resource strictly increase in the order the locks were granted:
// the order in which the acquisitions returned, since a lock is granted
// again only once the previous holder's validity has ended, after its
// acquisition returned. It returns the number of consecutive pairs
// compared and a description of those out of order.
func fenceOrder(ops []contention.Op) (checked int, bad []string) {
	granted := make(map[string][]contention.Op)
	for _, op := range ops {
		if op.Kind == contention.KindAcquire && op.Outcome == contention.OK {
			granted[op.Resource] = append(granted[op.Resource], op)
		}
	}
	for r, acq := range granted {
		slices.SortFunc(acq, func(a, b contention.Op) int { return cmp.Compare(a.End, b.End) })
		for i := 1; i < len(acq); i++ {
			checked++
			if a, b := acq[i-1], acq[i]; b.Fence <= a.Fence {
				bad = append(bad, fmt.Sprintf("%s: fence %d (client %d, returned at %v) after fence %d (client %d, returned at %v)",
					r, b.Fence, b.Client, b.End, a.Fence, a.Client, a.End))
			}
		}
	}
	return checked, bad
}

// The positive control of fenceOrder: a fence handed out twice, and one
// going back, are both reported; increasing fences are not.
func TestFenceOrderControl(t *testing.T) {
	acq := func(r string, end time.Duration, fence uint64) contention.Op {
		return contention.Op{Kind: contention.KindAcquire, Outcome: contention.OK, Resource: r, End: end, Fence: fence}
	}
	ops := []contention.Op{
		acq("a", 1, 10), acq("a", 3, 20), acq("a", 2, 15), // in order once sorted by return
		acq("b", 1, 10), acq("b", 2, 10), acq("b", 3, 9), // repeated, then going back
		{Kind: contention.KindAcquire, Outcome: contention.Refused, Resource: "b", End: 4},
	}
	checked, bad := fenceOrder(ops)
	if checked != 4 || len(bad) != 2 {
		t.Errorf("fenceOrder = %d checked, %d out of order %q; want 4 and 2 (both on b)", checked, len(bad), bad)
	}
}

// checkThenPut is a broken store: it reads the key (serializably, from
// whichever member its client asks) and, if it is free, grants a lease
// and puts the key — three requests where the store makes one
// transaction conditional on the key's absence. Two clients that both
// read "free" both take the lock.
func checkThenPut(s *etcd.Store, c *clientv3.Client) lock.Store {
	return brokenAcquire{Store: s, acquire: func(ctx context.Context, key, token string, secs int64) (uint64, error) {
		g, err := c.Get(ctx, key, clientv3.WithSerializable())
		if err != nil {
			return 0, err
		}
		if len(g.Kvs) > 0 {
			return 0, lock.ErrNotAcquired
		}
		l, err := c.Grant(ctx, secs)
		if err != nil {
			return 0, err
		}
		put, err := c.Put(ctx, key, token, clientv3.WithLease(l.ID))
		if err != nil {
			return 0, err
		}
		return uint64(put.Header.Revision), nil
	}}
}

// brokenAcquire is a Store whose acquisitions go through acquire; the
// other calls are the store's.
type brokenAcquire struct {
	*etcd.Store
	acquire func(ctx context.Context, key, token string, secs int64) (uint64, error)
}

func (b brokenAcquire) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	_, err := b.AcquireFenced(ctx, resource, token, ttl)
	return err
}

func (b brokenAcquire) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	return b.acquire(ctx, "faults/"+resource, token, int64((ttl+time.Second-1)/time.Second))
}

// AcquireQueued hides the store's, which takes locks with the store's own
// commands: the locker makes its attempts with the broken ones instead.
func (b brokenAcquire) AcquireQueued(context.Context, lock.QueuedAcquisition) (uint64, error) {
	return 0, errors.ErrUnsupported
}
