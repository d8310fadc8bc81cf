package faultsuite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/memcache"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/stores/redis"
)

// scenario is one scenario: its fixtures, closed in reverse order before
// the leak check, and its report.
type scenario struct {
	t       *testing.T
	ctx     context.Context
	name    string
	backend string
	control bool
	// validityControl: the control is one of the validity checker, whose
	// violations it must report (rather than overlaps).
	validityControl bool
	// lossy: the scenario makes writes that only fencing can refuse, so
	// the unfenced lost-update counter must show losses (it is the
	// resource without fencing) and the fenced one none.
	lossy bool
	// hazard: the scenario measures a fault outside every guarantee,
	// which may or may not cause violations in a run: they are reported,
	// not failed; residue and leaks still fail it.
	hazard bool
	// leaky: the scenario is a positive control of the residue checker,
	// whose lockers leave keys behind: residue must be counted, and
	// nothing else go wrong.
	leaky    bool
	base     faultkit.GoroutineSet
	grown    bool // shared fixtures restart: compare goroutine counts, not identities
	mu       sync.Mutex
	closers  []func()
	closed   bool
	prefixes atomic.Int64
	slow     []func() // see onSlow
	// clientOptions, if set, adjusts the options of the Redis clients of
	// the code under test.
	clientOptions func(*rueidis.ClientOption)
}

// onSlow registers f, which slows a link down, to run at slowDown: once
// the clients are connected.
func (s *scenario) onSlow(f func()) { s.slow = append(s.slow, f) }

// slowDown runs the functions registered with onSlow.
func (s *scenario) slowDown() {
	for _, f := range s.slow {
		f()
	}
}

// scenarioTimeout bounds every scenario: a hang fails it rather than the
// whole test binary.
const scenarioTimeout = 2 * time.Minute

// begin starts a scenario. Shared fixtures (the cluster) must be obtained
// before, so that their goroutines are not taken for leaks.
func begin(t *testing.T, name, backend string) *scenario {
	t.Helper()
	s := &scenario{t: t, name: name, backend: backend, base: faultkit.Goroutines()}
	ctx, cancel := context.WithTimeout(t.Context(), scenarioTimeout)
	s.ctx = ctx
	s.onClose(cancel)
	t.Cleanup(s.close)
	return s
}

// beginControl starts a positive control: a deliberately broken setup on
// which the checkers must report violations.
func beginControl(t *testing.T, name, backend string) *scenario {
	t.Helper()
	s := begin(t, name, backend)
	s.control = true
	return s
}

// onClose registers f to run when the scenario's fixtures are closed.
func (s *scenario) onClose(f func()) {
	s.mu.Lock()
	s.closers = append(s.closers, f)
	s.mu.Unlock()
}

// close closes the fixtures, newest first; it runs once.
func (s *scenario) close() {
	s.mu.Lock()
	closers := s.closers
	done := s.closed
	s.closed, s.closers = true, nil
	s.mu.Unlock()
	if done {
		return
	}
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}

// finish measures the residue (if count is set: the keys left after
// waiting up to residueWait for them to go), closes the fixtures, checks
// for leaked goroutines, emits the report line and asserts: no violation
// of any kind in a scenario, violations in a control, and in both no
// residue and no leak.
func (s *scenario) finish(rep contention.Report, count func(context.Context) (int, error)) contention.Report {
	s.t.Helper()
	rep.Scenario, rep.Backend = s.name, s.backend
	if count != nil {
		n, err := faultkit.Residue(s.ctx, residueWait, count)
		if err != nil {
			s.t.Errorf("%s: counting residual keys: %v", s.name, err)
		}
		rep.Residue = n
	}
	s.close()
	var leaked []string
	if s.grown {
		leaked = s.base.Grown(10 * time.Second)
	} else {
		leaked = s.base.Leaked(10 * time.Second)
	}
	rep.LeakedGoroutines = len(leaked)
	for i, g := range leaked {
		if i == 3 {
			break
		}
		s.t.Logf("leaked goroutine:\n%s", g)
	}
	faultkit.Emit(s.t, rep)
	if s.leaky {
		if rep.Residue == 0 {
			s.t.Errorf("%s: positive control left lock keys behind and none was counted: the residue checker is blind to keys that are never released", s.name)
		}
		clean := rep
		clean.Residue = 0
		if bad := clean.Unsafe(); bad != "" {
			s.t.Errorf("%s on %s: %s", s.name, s.backend, bad)
		}
	} else if s.control {
		if rep.Violations == 0 && (!s.validityControl || rep.ValidityViolations == 0) {
			s.t.Errorf("%s: positive control reported no violation: the checker is blind to a known-unsafe setup", s.name)
		}
		if rep.Residue > 0 || rep.LeakedGoroutines > 0 {
			s.t.Errorf("%s: %d residual keys, %d leaked goroutines; want 0", s.name, rep.Residue, rep.LeakedGoroutines)
		}
	} else if s.hazard {
		if rep.Residue > 0 || rep.LeakedGoroutines > 0 {
			s.t.Errorf("%s: %d residual keys, %d leaked goroutines; want 0", s.name, rep.Residue, rep.LeakedGoroutines)
		}
	} else if s.lossy {
		if rep.LostUpdates == 0 {
			s.t.Errorf("%s: the stalled writes lost no update on the unfenced counter: they did not write after their lock expired", s.name)
		}
		clean := rep
		clean.LostUpdates = 0
		if bad := clean.Unsafe(); bad != "" {
			s.t.Errorf("%s on %s: %s", s.name, s.backend, bad)
		}
	} else if bad := rep.Unsafe(); bad != "" {
		s.t.Errorf("%s on %s: %s", s.name, s.backend, bad)
	}
	return rep
}

// residueWait bounds how long finish waits for the lock keys to go before
// it counts them as residue: long enough for a release under way to land
// on a loaded 2-core CI machine under the race detector (finish returns as
// soon as none is left), and under the TTL of every scenario but the two
// shortest (100 and 300ms), so that the servers' expiry does not remove a
// key left behind before it is counted. A scenario whose cleanup
// legitimately takes longer waits for it before finish.
const residueWait = 200 * time.Millisecond

// run runs a workload and returns its report; the run must not fail.
func (s *scenario) run(cfg contention.Config) (contention.Report, *contention.Result) {
	s.t.Helper()
	res, err := contention.Run(s.ctx, cfg)
	if err != nil {
		s.t.Fatalf("%s: %v", s.name, err)
	}
	s.logViolations(res.Recorder, res.Limit)
	return res.Report(s.name, s.backend), res
}

// logViolations logs the claims that overlap and the locks whose
// validity outlived the servers' TTL, to explain a failure.
func (s *scenario) logViolations(rec *contention.Recorder, limit int) {
	ops := rec.Ops()
	for _, v := range contention.CheckHolders(contention.Claims(ops), limit).Examples {
		s.t.Logf("overlap of %v: %+v and %+v", v.Overlap, v.A, v.B)
	}
	for _, op := range ops {
		if op.Kind == contention.KindServerTTL && op.Outcome == contention.OK && op.ValidUntil > op.ServerExpiry {
			s.t.Logf("validity beyond the servers' TTL by %v: %+v", op.ValidUntil-op.ServerExpiry, op)
		}
	}
}

// prefix returns a key prefix no other store of the test binary uses.
func (s *scenario) prefix() string {
	return fmt.Sprintf("fs%d-%d:", prefixSeq.Add(1), s.prefixes.Add(1))
}

var prefixSeq atomic.Int64

// Fixtures.

// redisServers starts n fresh Redis servers for the scenario.
func (s *scenario) redisServers(n int) []*redistest.Server {
	s.t.Helper()
	servers := redistest.StartN(s.t, n)
	for _, srv := range servers {
		s.onClose(srv.Close)
	}
	return servers
}

// memcacheServers starts n fresh memcached servers for the scenario.
func (s *scenario) memcacheServers(n int, o *memcachetest.Options) []*memcachetest.Server {
	s.t.Helper()
	servers := memcachetest.StartN(s.t, n, o)
	for _, srv := range servers {
		s.onClose(srv.Kill)
	}
	return servers
}

// proxy starts a fault proxy to addr for the scenario.
func (s *scenario) proxy(addr string) *faultproxy.Proxy {
	s.t.Helper()
	p, err := faultproxy.New(addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.onClose(func() { _ = p.Close() })
	return p
}

var netDialer = net.Dialer{Timeout: 2 * time.Second}

// redisClient returns a client of the code under test, closed with the
// scenario: rueidis's defaults, with dialing and writing bounded so a dead
// server fails fast, adjusted by the scenario's clientOptions if set.
func (s *scenario) redisClient(addrs ...string) rueidis.Client {
	s.t.Helper()
	o := rueidis.ClientOption{
		InitAddress:      addrs,
		Dialer:           netDialer,
		ConnWriteTimeout: 2 * time.Second,
	}
	if s.clientOptions != nil {
		s.clientOptions(&o)
	}
	c, err := rueidis.NewClient(o)
	if err != nil {
		s.t.Fatalf("rueidis client of %v: %v", addrs, err)
	}
	s.onClose(c.Close)
	return c
}

// memcacheClient returns a gomemcache client of addr.
func (s *scenario) memcacheClient(addr string) *gomemcache.Client {
	c := gomemcache.New(addr)
	c.Timeout = time.Second
	c.MaxIdleConns = 64
	s.onClose(func() { _ = c.Close() })
	return c
}

// Backends.

// backend makes the lockers of a scenario's clients and knows how to read
// a lock's remaining TTL on its servers and count the keys left.
type backend struct {
	name   string
	quorum int // servers that must hold a lock: 1, or a majority
	// stores returns a fresh set of stores (own connections) for a client.
	stores func(client int) []lock.Store
	opts   lock.Options
	// serverTTL returns the remaining TTL of a lock on every server that
	// holds it under its token, rounded up (nil: not readable).
	serverTTL func(ctx context.Context, l lock.Lock) ([]time.Duration, error)
	// count counts the lock keys left on the servers.
	count func(ctx context.Context) (int, error)
}

// newLocker makes the locker of one client.
func (b *backend) newLocker(client int) (lock.Locker, func(), error) {
	stores := b.stores(client)
	opts := b.opts
	if len(stores) == 1 {
		l, err := lock.NewSingle(stores[0], &opts)
		return l, nil, err
	}
	l, err := lock.NewMulti(stores, &opts)
	return l, nil, err
}

// locker makes a locker, failing the test on error.
func (b *backend) locker(t *testing.T, client int) lock.Locker {
	t.Helper()
	l, _, err := b.newLocker(client)
	if err != nil {
		t.Fatalf("%s: new locker: %v", b.name, err)
	}
	return l
}

// holdFor is how long the hand-written scenarios hold a lock they took.
const holdFor = 20 * time.Millisecond

// multiTimeout is the store timeout of the multi-store lockers: generous,
// so that a slow answer on a busy machine is not taken for a failure.
const multiTimeout = 200 * time.Millisecond

func memBackend() *backend {
	store := memory.New()
	return &backend{
		name: "memory", quorum: 1,
		stores: func(int) []lock.Store { return []lock.Store{store} },
		serverTTL: func(ctx context.Context, l lock.Lock) ([]time.Duration, error) {
			d, held, err := store.TTL(ctx, l.Resource)
			if err != nil || !held {
				return nil, err
			}
			return []time.Duration{d}, nil
		},
		count: func(context.Context) (int, error) { return len(store.Resources()), nil },
	}
}

// redisKey is the key of a resource with a simple name.
func redisKey(prefix, resource string) string { return prefix + "{" + resource + "}" }

// ttlScript returns the remaining TTL of a lock key held under a token,
// -3 if it is not.
const ttlScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PTTL', KEYS[1]) end return -3`

// node is a Redis server with a client of the scenario's own for reading
// what the servers hold: the fixture's admin clients are not used from
// workers, so that they start no goroutine during a scenario.
type node struct {
	srv *redistest.Server
	c   rueidis.Client
}

// nodes returns an observing client for each server, closed with the
// scenario. Each talks to its server alone (no cluster redirects).
func (s *scenario) nodes(servers []*redistest.Server) []node {
	s.t.Helper()
	out := make([]node, len(servers))
	for i, srv := range servers {
		if !srv.Running() {
			out[i] = node{srv: srv} // a dead node: nothing to observe
			continue
		}
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{srv.Addr()}, ForceSingleClient: true, DisableCache: true,
			Dialer: netDialer, ConnWriteTimeout: 2 * time.Second,
		})
		if err != nil {
			s.t.Fatalf("observer of %s: %v", srv.Name, err)
		}
		s.onClose(c.Close)
		out[i] = node{srv, c}
	}
	return out
}

// do runs a command on the node within a short timeout.
func (n node) do(cmd ...string) rueidis.RedisResult {
	if n.c == nil {
		return rueidis.NewErrorResult(fmt.Errorf("%s was down when the scenario began", n.srv.Name))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	return n.c.Do(ctx, n.c.B().Arbitrary(cmd...).Build())
}

// redisTTLs reads a lock's remaining TTL on the nodes that hold it under
// its token, rounded up. Only a node that serves the key answers (a
// cluster replica, or a master of other slots, answers MOVED, which tells
// nothing: during a failover both nodes of a slot can point at each
// other); see judged for reads that cannot be judged.
//
// expect is the number of nodes expected to answer: every one, or on a
// cluster the one serving the key.
func redisTTLs(nodes []node, prefix string, l lock.Lock, expect, quorum int) ([]time.Duration, error) {
	var ttls []time.Duration
	answered := 0
	for _, n := range nodes {
		if !n.srv.Running() {
			continue
		}
		ms, err := n.do("EVAL", ttlScript, "1", redisKey(prefix, l.Resource), l.Token).AsInt64()
		if err != nil {
			continue
		}
		answered++
		if ms >= 0 {
			ttls = append(ttls, time.Duration(ms+1)*time.Millisecond)
		}
	}
	return judged(ttls, answered, expect, quorum)
}

// judged returns the TTLs read if they can be judged: when at least a
// quorum holds the lock, or every server answered (then the missing
// copies are known to be missing). A server that is down or does not
// answer may still hold its copy — a killed node restarts empty only
// after a delay, a paused one keeps its keys — so with fewer copies found
// than a quorum, and silent servers, the read cannot tell, and it returns
// an error: the read is then not judged.
func judged(ttls []time.Duration, answered, total, quorum int) ([]time.Duration, error) {
	if len(ttls) < quorum && answered < total {
		return nil, fmt.Errorf("%d copies found on the %d of %d servers that answered; a quorum is %d", len(ttls), answered, total, quorum)
	}
	return ttls, nil
}

// countRedis counts the lock keys with prefix on the running masters among
// the nodes (fence counters and semaphores' limit markers, which outlive
// locks by design, do not count).
func countRedis(nodes []node, prefix string) (int, error) {
	count := 0
	for _, n := range nodes {
		if !n.srv.Running() || n.c == nil {
			continue
		}
		role, err := n.do("ROLE").ToArray()
		if err != nil || len(role) == 0 {
			return 0, fmt.Errorf("%s: ROLE: %v", n.srv.Name, err)
		}
		if r, _ := role[0].ToString(); r != "master" {
			continue
		}
		keys, err := scanKeys(n, prefix+"*")
		if err != nil {
			return 0, err
		}
		for _, k := range keys {
			if !strings.HasSuffix(k, ":fence") && !strings.HasSuffix(k, limitMarker+"}") {
				count++
			}
		}
	}
	return count, nil
}

// limitMarker ends the resource of a semaphore's limit marker, a lock
// that lives for the TTL of the latest permit taken, released or not
// (see lock.NewSemaphore).
const limitMarker = "~limit"

func scanKeys(n node, match string) ([]string, error) {
	var keys []string
	cursor := "0"
	for {
		r, err := n.do("SCAN", cursor, "MATCH", match, "COUNT", "1000").ToArray()
		if err != nil || len(r) != 2 {
			return nil, fmt.Errorf("%s: SCAN: %v", n.srv.Name, err)
		}
		cursor, _ = r[0].ToString()
		batch, err := r[1].AsStrSlice()
		if err != nil {
			return nil, err
		}
		keys = append(keys, batch...)
		if cursor == "0" {
			return keys, nil
		}
	}
}

// redisBackend is a single Redis store (one server) or a Redlock over
// several, each client with its own connections.
func (s *scenario) redisBackend(name string, servers []*redistest.Server, opts ...redis.Option) (*backend, string) {
	prefix := s.prefix()
	addrs := make([]string, len(servers))
	for i, srv := range servers {
		addrs[i] = srv.Addr()
	}
	return s.redisBackendAt(name, servers, addrs, prefix, opts...), prefix
}

// redisBackendAt is redisBackend with clients connecting to addrs (the
// servers' own addresses, or proxies in front of them).
func (s *scenario) redisBackendAt(name string, servers []*redistest.Server, addrs []string, prefix string, opts ...redis.Option) *backend {
	obs := s.nodes(servers)
	b := &backend{
		name: name, quorum: len(servers)/2 + 1,
		stores: func(client int) []lock.Store {
			stores := make([]lock.Store, len(addrs))
			for i, addr := range addrs {
				st, err := redis.New(s.redisClient(addr), append([]redis.Option{redis.WithPrefix(prefix), redis.WithName(fmt.Sprintf("redis-%d", i))}, opts...)...)
				if err != nil {
					s.t.Fatalf("redis.New: %v", err)
				}
				stores[i] = st
			}
			return stores
		},
		serverTTL: func(_ context.Context, l lock.Lock) ([]time.Duration, error) {
			return redisTTLs(obs, prefix, l, len(servers), len(servers)/2+1)
		},
		count: func(context.Context) (int, error) { return countRedis(obs, prefix) },
	}
	if len(servers) > 1 {
		b.opts.StoreTimeout = multiTimeout
	}
	return b
}

// clusterBackend is a Redis store on the shared cluster.
func (s *scenario) clusterBackend(c *redistest.Cluster, opts ...redis.Option) (*backend, string) {
	prefix := s.prefix()
	obs := s.nodes(c.Nodes)
	b := &backend{
		name: "redis-cluster", quorum: 1,
		stores: func(int) []lock.Store {
			st, err := redis.New(s.redisClient(c.Addrs()...), append([]redis.Option{redis.WithPrefix(prefix)}, opts...)...)
			if err != nil {
				s.t.Fatalf("redis.New: %v", err)
			}
			return []lock.Store{st}
		},
		// The node serving the key answers; the others answer MOVED.
		serverTTL: func(_ context.Context, l lock.Lock) ([]time.Duration, error) {
			return redisTTLs(obs, prefix, l, 1, 1)
		},
		count: func(context.Context) (int, error) { return countRedis(obs, prefix) },
	}
	return b, prefix
}

// memcacheBackend is a single memcached store or a quorum over several.
func (s *scenario) memcacheBackend(name string, servers []*memcachetest.Server) (*backend, string) {
	return s.memcacheBackendWith(name, servers, false)
}

// memcacheServerBackend is memcacheBackend with stores made WithServer:
// locks taken on the stores' own connections, released by CAS id.
func (s *scenario) memcacheServerBackend(name string, servers []*memcachetest.Server) (*backend, string) {
	return s.memcacheBackendWith(name, servers, true)
}

func (s *scenario) memcacheBackendWith(name string, servers []*memcachetest.Server, withServer bool) (*backend, string) {
	prefix := s.prefix()
	b := &backend{
		name: name, quorum: len(servers)/2 + 1,
		stores: func(int) []lock.Store {
			stores := make([]lock.Store, len(servers))
			for i, srv := range servers {
				opts := []memcache.Option{memcache.WithPrefix(prefix), memcache.WithName(fmt.Sprintf("memcached-%d", i))}
				if withServer {
					opts = append(opts, memcache.WithServer(srv.Addr()))
				}
				st, err := memcache.New(s.memcacheClient(srv.Addr()), opts...)
				if err != nil {
					s.t.Fatalf("memcache.New: %v", err)
				}
				s.onClose(func() { _ = st.Close() })
				stores[i] = st
			}
			return stores
		},
		serverTTL: func(_ context.Context, l lock.Lock) ([]time.Duration, error) { return memcacheTTLs(servers, prefix, l) },
		count:     func(context.Context) (int, error) { return countMemcache(servers, prefix) },
	}
	if len(servers) > 1 {
		b.opts.StoreTimeout = multiTimeout
	}
	return b, prefix
}

// memcacheTTLs reads a lock's remaining TTL on the running servers: the
// whole seconds memcached reports, already an upper bound. memcached's
// clock counts whole seconds, once a second; an item expires at the tick
// that brings the clock to its expiry, and one that has t seconds left
// expires at the t-th tick from now, within t seconds (an item set with
// exptime 3 expires 2 to 3 s later). As with redisTTLs, a read that
// cannot be judged is an error.
func memcacheTTLs(servers []*memcachetest.Server, prefix string, l lock.Lock) ([]time.Duration, error) {
	var ttls []time.Duration
	answered := 0
	for _, srv := range servers {
		if !srv.Running() {
			continue
		}
		it, found, err := srv.Get(prefix + l.Resource)
		if err != nil {
			continue // paused or dying
		}
		answered++
		if found && it.Value == l.Token {
			ttls = append(ttls, time.Duration(it.TTL)*time.Second)
		}
	}
	return judged(ttls, answered, len(servers), len(servers)/2+1)
}

// countMemcache counts the live items with prefix on the running servers,
// from memcached's own dump of its items (the fence counter and the run's
// mark, one item each per prefix, and semaphores' limit markers, which
// outlive locks by design, do not count).
func countMemcache(servers []*memcachetest.Server, prefix string) (int, error) {
	n := 0
	for _, srv := range servers {
		if !srv.Running() {
			continue
		}
		err := srv.Do("lru_crawler metadump all", func(r *bufio.Reader) error {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return err
				}
				line = strings.TrimSpace(line)
				if line == "END" {
					return nil
				}
				if strings.HasPrefix(line, "BUSY") || strings.HasPrefix(line, "ERROR") {
					return errors.New(line)
				}
				field, _, _ := strings.Cut(line, " ")
				key, err := url.QueryUnescape(strings.TrimPrefix(field, "key="))
				if err == nil && strings.HasPrefix(key, prefix) && key != prefix+"#fence" && key != prefix+"#run" && !strings.HasSuffix(key, limitMarker) {
					n++
				}
			}
		})
		if err != nil {
			return 0, fmt.Errorf("%s: metadump: %w", srv.Name, err)
		}
	}
	return n, nil
}

// mixedBackend is a quorum over Redis and memcached stores together.
func (s *scenario) mixedBackend(rs []*redistest.Server, ms []*memcachetest.Server) *backend {
	rb, _ := s.redisBackend("redis", rs)
	mb, _ := s.memcacheBackend("memcache", ms)
	n := len(rs) + len(ms)
	b := &backend{
		name: fmt.Sprintf("mixed-%dredis-%dmemcache", len(rs), len(ms)), quorum: n/2 + 1,
		stores: func(client int) []lock.Store { return append(rb.stores(client), mb.stores(client)...) },
		serverTTL: func(ctx context.Context, l lock.Lock) ([]time.Duration, error) {
			a, err := rb.serverTTL(ctx, l)
			if err != nil {
				return nil, err
			}
			m, err := mb.serverTTL(ctx, l)
			return append(a, m...), err
		},
		count: func(ctx context.Context) (int, error) {
			a, err := rb.count(ctx)
			if err != nil {
				return 0, err
			}
			m, err := mb.count(ctx)
			return a + m, err
		},
	}
	b.opts.StoreTimeout = multiTimeout
	return b
}

// config returns the workload of a backend: its lockers, server reads and
// quorum. A run goes on past duration until it sees a lock granted after
// its last fault (within awaitRecovery): a fault that takes longer than
// planned to inject or heal on a loaded machine (a failover, a restart)
// must not leave the run without time to recover.
func (b *backend) config(workers int, ttl, hold, duration time.Duration) contention.Config {
	return contention.Config{
		Workers: workers, NewLocker: b.newLocker, TTL: ttl, Hold: hold, Duration: duration,
		AwaitRecovery: awaitRecovery, ServerTTL: b.serverTTL, Quorum: b.quorum,
	}
}

// awaitRecovery bounds how long a run waits past its duration for a lock
// granted after its last fault.
const awaitRecovery = 10 * time.Second

// prebuilt makes the lockers of n clients now — connections included —
// and returns a NewLocker handing them out, for scenarios that slow the
// links down before the run (a handshake through a slow link would take
// seconds).
func (b *backend) prebuilt(t *testing.T, n int) func(int) (lock.Locker, func(), error) {
	t.Helper()
	lockers := make([]lock.Locker, n)
	for i := range lockers {
		lockers[i] = b.locker(t, i)
	}
	return func(i int) (lock.Locker, func(), error) { return lockers[i], nil, nil }
}

// Small helpers.

// eventually polls cond every 10ms until it holds, failing the test after
// within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
