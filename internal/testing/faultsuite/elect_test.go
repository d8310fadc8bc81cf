package faultsuite_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/stores/memory"
)

// link is one candidate's way to its stores, which faults act on: its
// connections through fault proxies, or, on the memory store, a wrapper
// that does to the calls what the proxies do to the bytes.
type link interface {
	stall()                     // nothing passes until heal: a paused process
	slow(latency time.Duration) // replies arrive late
	loseReplies()               // requests take effect, replies are lost
	heal()
}

// proxyLink is a candidate's connections to every server, each through
// its own proxy.
type proxyLink []*faultproxy.Proxy

func (l proxyLink) each(f func(p *faultproxy.Proxy)) {
	for _, p := range l {
		f(p)
	}
}
func (l proxyLink) stall() {
	l.each(func(p *faultproxy.Proxy) { p.Set(faultproxy.Both, faultproxy.Hold()) })
}
func (l proxyLink) slow(d time.Duration) {
	l.each(func(p *faultproxy.Proxy) { p.Set(faultproxy.ToClient, faultproxy.Delay(d, 0)) })
}
func (l proxyLink) loseReplies() {
	l.each(func(p *faultproxy.Proxy) { p.Set(faultproxy.ToClient, faultproxy.Drop()) })
}
func (l proxyLink) heal() { l.each(func(p *faultproxy.Proxy) { p.Heal() }) }

// memLink is a candidate's link to a shared memory store.
type memLink struct {
	mu      sync.Mutex
	mode    string // "", "stall", "slow", "lose"
	latency time.Duration
	healed  chan struct{}
}

func (l *memLink) set(mode string, latency time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.healed == nil {
		l.healed = make(chan struct{})
	}
	if mode == "" {
		close(l.healed)
		l.healed = make(chan struct{})
	}
	l.mode, l.latency = mode, latency
}

func (l *memLink) stall()               { l.set("stall", 0) }
func (l *memLink) slow(d time.Duration) { l.set("slow", d) }
func (l *memLink) loseReplies()         { l.set("lose", 0) }
func (l *memLink) heal()                { l.set("", 0) }

var errReplyLost = errors.New("reply lost")

// call runs op through the link.
func (l *memLink) call(ctx context.Context, op func() error) error {
	l.mu.Lock()
	mode, latency, healed := l.mode, l.latency, l.healed
	l.mu.Unlock()
	switch mode {
	case "stall":
		select {
		case <-healed:
		case <-ctx.Done():
			return ctx.Err()
		}
	case "slow":
		err := op()
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			return ctx.Err() // the reply did not arrive in time
		}
		return err
	case "lose":
		_ = op()
		return errReplyLost
	}
	return op()
}

// linkedStore is a shared memory store reached through a memLink.
type linkedStore struct {
	*memory.Store
	link *memLink
}

func (s linkedStore) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	return s.link.call(ctx, func() error { return s.Store.Acquire(ctx, r, tok, ttl) })
}

func (s linkedStore) AcquireFenced(ctx context.Context, r, tok string, ttl time.Duration) (fence uint64, err error) {
	err = s.link.call(ctx, func() (err error) {
		fence, err = s.Store.AcquireFenced(ctx, r, tok, ttl)
		return err
	})
	if err != nil {
		return 0, err
	}
	return fence, nil
}

func (s linkedStore) Release(ctx context.Context, r, tok string) error {
	return s.link.call(ctx, func() error { return s.Store.Release(ctx, r, tok) })
}

func (s linkedStore) Extend(ctx context.Context, r, tok string, ttl time.Duration) error {
	return s.link.call(ctx, func() error { return s.Store.Extend(ctx, r, tok, ttl) })
}

func (s linkedStore) Exists(ctx context.Context, r string) (bool, error) {
	var held bool
	err := s.link.call(ctx, func() (err error) {
		held, err = s.Store.Exists(ctx, r)
		return err
	})
	return held, err
}

// candidates are the lockers of n candidates over one backend, each with
// its own link, and a count of the lock keys left on the servers.
type candidates struct {
	lockers []lock.Locker
	links   []link
	count   func(context.Context) (int, error)
}

type electBackend struct {
	name  string
	build func(s *scenario, n int, o lock.Options) candidates
}

func electBackends() []electBackend {
	return []electBackend{
		{"memory", func(s *scenario, n int, o lock.Options) candidates {
			store := memory.New()
			var c candidates
			for range n {
				l := &memLink{}
				l.heal()
				locker, err := lock.NewSingle(linkedStore{store, l}, &o)
				if err != nil {
					s.t.Fatal(err)
				}
				c.lockers, c.links = append(c.lockers, locker), append(c.links, l)
			}
			c.count = func(context.Context) (int, error) { return len(store.Resources()), nil }
			return c
		}},
		{"redis", func(s *scenario, n int, o lock.Options) candidates { return s.redisCandidates("redis", 1, n, o) }},
		{"redlock-3", func(s *scenario, n int, o lock.Options) candidates { return s.redisCandidates("redlock-3", 3, n, o) }},
	}
}

// redisCandidates starts servers and gives each of n candidates its own
// connections to them through proxies of its own.
func (s *scenario) redisCandidates(name string, servers, n int, o lock.Options) candidates {
	s.clientOptions = func(o *rueidis.ClientOption) { o.AlwaysPipelining = true }
	srvs := s.redisServers(servers)
	prefix := s.prefix()
	var c candidates
	for i := range n {
		var pl proxyLink
		addrs := make([]string, servers)
		for j, srv := range srvs {
			p := s.proxy(srv.Addr())
			pl, addrs[j] = append(pl, p), p.Addr()
		}
		b := s.redisBackendAt(name, srvs, addrs, prefix)
		b.opts = o
		if servers > 1 {
			b.opts.StoreTimeout = multiTimeout
		}
		c.lockers, c.links = append(c.lockers, b.locker(s.t, i)), append(c.links, pl)
		c.count = b.count
	}
	return c
}

// runElection runs n candidates campaigning for one role for 13 TTLs
// (5 for the control) while the leader suffers, in turn, a pause (its
// links stall for two TTLs), slow renewals (replies 60% of a TTL late),
// lost replies, and a kill (its links stall for good and it neither acts
// nor resigns): see faultkit.Election. With careless set, leaders ignore
// their term's context: the positive control.
func runElection(s *scenario, c candidates, ttl time.Duration, careless bool) faultkit.ElectionRun {
	on := func(f func(l link)) func(int) { return func(i int) { f(c.links[i]) } }
	heal := on(link.heal)
	e := faultkit.Election{Candidates: c.lockers, TTL: ttl, Duration: 13 * ttl, Careless: careless, Faults: []faultkit.LeaderFault{
		{At: ttl * 16 / 10, For: 2 * ttl, Inject: on(link.stall), Heal: heal},
		{At: 5 * ttl, For: ttl * 25 / 10, Inject: on(func(l link) { l.slow(ttl * 6 / 10) }), Heal: heal},
		{At: ttl * 85 / 10, For: ttl * 8 / 10, Inject: on(link.loseReplies), Heal: heal},
		{At: ttl * 105 / 10, Kill: true, Inject: on(link.stall), Heal: heal},
	}}
	if careless {
		e.Duration, e.Faults = 5*ttl, e.Faults[:1] // the pause is enough to show the overlaps
	}
	run, err := e.Run(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return run
}

// Leaders under pauses, slow renewals, lost replies and a kill: never two
// leaders whose terms overlap, fences strictly increasing per term.
func TestElectionUnderFaults(t *testing.T) {
	const ttl = 500 * time.Millisecond
	for _, eb := range electBackends() {
		t.Run(eb.name, func(t *testing.T) {
			s := begin(t, "election-faults", eb.name)
			c := eb.build(s, 3, lock.Options{})
			run := runElection(s, c, ttl, false)
			for _, term := range run.Terms {
				t.Logf("term %+v", term)
			}
			rep := run.Report(s.name, eb.name)
			if run.Faults < 4 || run.Lost() == 0 || len(run.Terms) < 5 {
				t.Errorf("%d faults on a leader, %d terms, %d lost; want the four faults, and the pause to cost a term", run.Faults, len(run.Terms), run.Lost())
			}
			s.finish(rep, c.count)
		})
	}
}

// The positive control: leaders that ignore their term's context keep
// acting after a pause cost them their term, while the next leader acts:
// the checker must see the overlap.
func TestControlElectionLeaderIgnoringItsTerm(t *testing.T) {
	const ttl = 500 * time.Millisecond
	eb := electBackends()[0]
	s := beginControl(t, "election-careless-leader", eb.name)
	c := eb.build(s, 3, lock.Options{})
	rep := runElection(s, c, ttl, true).Report(s.name, eb.name)
	s.finish(rep, c.count)
}
