package faultsuite_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
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

// term is one leadership term as a candidate lived it. Times are offsets
// from the start of the run.
type term struct {
	client       int
	fence        uint64
	elected      time.Duration // Campaign returned
	lastAct      time.Duration // the last action taken as leader (elected if none)
	resigned     time.Duration // Resign called
	validUntil   time.Duration // the term's end as last reported
	lost, killed bool
}

// electionRun is the record of an election scenario.
type electionRun struct {
	terms  []term
	faults int // faults injected on a leader
}

// runElection runs n candidates campaigning for one role for 13 TTLs
// (5 for the control) while the leader suffers, in turn, a pause (its links stall for
// two TTLs), slow renewals (replies 60% of a TTL late), lost replies, and
// a kill (its links stall for good and it neither acts nor resigns). Each
// leader acts every 20ms, checking its term's context first, for 5 to 15
// actions and resigns — or, while a fault is on it, until its term ends.
// With careless set, leaders ignore their term's context: the positive
// control.
func runElection(s *scenario, c candidates, ttl time.Duration, careless bool) electionRun {
	n := len(c.lockers)
	length := 13 * ttl
	if careless {
		length = 5 * ttl // the pause is enough to show the overlaps
	}
	ctx, cancel := context.WithTimeout(s.ctx, length)
	defer cancel()
	base := time.Now()
	since := func() time.Duration { return time.Since(base) }

	var mu sync.Mutex
	var run electionRun
	var leader atomic.Int32          // the leading candidate + 1, or 0
	held := make([]atomic.Bool, n)   // a fault is on this leader: it stays until its term ends
	killed := make([]atomic.Bool, n) // this candidate is dead
	var abandoned []*lock.Term       // the killed leaders' terms, resigned after the run

	var wg sync.WaitGroup
	for i := range n {
		e, err := lock.NewElection(c.lockers[i], "leader", ttl)
		if err != nil {
			s.t.Fatal(err)
		}
		wg.Go(func() {
			for ctx.Err() == nil && !killed[i].Load() {
				t, err := e.Campaign(ctx)
				if err != nil {
					if ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond) // a store failure: campaign again
					}
					continue
				}
				rec := term{client: i, fence: t.Fence(), elected: since()}
				rec.lastAct = rec.elected
				leader.Store(int32(i + 1))
				tctx := t.Context()
				for acts := 5 + rand.IntN(11); ; acts-- {
					if killed[i].Load() {
						break
					}
					if acts <= 0 {
						// Done, unless a fault is on: it stays until its term
						// ends. Decided under mu, so that the injector never
						// picks a leader on its way out.
						mu.Lock()
						stay := held[i].Load()
						if !stay {
							leader.CompareAndSwap(int32(i+1), 0)
						}
						mu.Unlock()
						if !stay {
							break
						}
					}
					now := since() // taken before the check: the action is at now
					if !careless && tctx.Err() != nil {
						break
					}
					rec.lastAct = now
					time.Sleep(20 * time.Millisecond)
					if ctx.Err() != nil {
						break
					}
				}
				leader.CompareAndSwap(int32(i+1), 0)
				rec.resigned = since()
				rec.validUntil = t.ValidUntil().Sub(base)
				rec.lost = errors.Is(context.Cause(tctx), lock.ErrLost)
				rec.killed = killed[i].Load()
				mu.Lock()
				run.terms = append(run.terms, rec)
				if rec.killed {
					abandoned = append(abandoned, t)
				}
				mu.Unlock()
				if !rec.killed {
					_ = t.Resign(s.ctx)
					time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond) // let the others campaign
				}
			}
		})
	}

	// The faults, each on whoever leads when it is due.
	onLeader := func(at, length time.Duration, inject func(i int)) {
		select {
		case <-time.After(time.Until(base.Add(at))):
		case <-ctx.Done():
			return
		}
		for ctx.Err() == nil {
			mu.Lock()
			i := int(leader.Load()) - 1
			if i >= 0 {
				held[i].Store(true)
				run.faults++
			}
			mu.Unlock()
			if i >= 0 {
				inject(i)
				if length > 0 {
					time.Sleep(length)
					c.links[i].heal()
					held[i].Store(false)
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	onLeader(ttl*16/10, 2*ttl, func(i int) { c.links[i].stall() })
	onLeader(5*ttl, ttl*25/10, func(i int) { c.links[i].slow(ttl * 6 / 10) })
	onLeader(ttl*85/10, ttl*8/10, func(i int) { c.links[i].loseReplies() })
	if !careless {
		onLeader(ttl*105/10, 0, func(i int) {
			killed[i].Store(true)
			c.links[i].stall()
		})
	}
	<-ctx.Done()
	wg.Wait()
	for i := range c.links {
		c.links[i].heal()
	}
	for _, t := range abandoned {
		_ = t.Resign(s.ctx)
	}
	slices.SortFunc(run.terms, func(a, b term) int { return int(a.elected - b.elected) })
	return run
}

// checkElection judges a run: the terms as the leaders acted on them
// (from election to their last action) and as the library bounded them
// (from election to the earlier of resignation and the end of the term's
// validity) must not overlap, and each term's fence must be above every
// earlier term's.
func checkElection(run electionRun) contention.Report {
	var acted, valid []contention.Claim
	for _, t := range run.terms {
		c := contention.Claim{Client: t.client, Resource: "leader", Token: fmt.Sprint(t.fence, "/", t.elected), Fence: t.fence, Start: t.elected}
		c.End = t.lastAct
		acted = append(acted, c)
		c.End = min(t.resigned, t.validUntil)
		valid = append(valid, c)
	}
	a, v := contention.CheckOverlap(acted), contention.CheckOverlap(valid)
	rep := contention.Report{
		Acquisitions: len(run.terms),
		Violations:   a.Violations + v.Violations,
		MaxHolders:   max(a.MaxHolders, v.MaxHolders),
		MaxOverlap:   max(a.MaxOverlap, v.MaxOverlap),
	}
	var top uint64
	lost := 0
	for _, t := range run.terms {
		if t.fence <= top {
			rep.StaleAccepted++ // a term whose fence does not exceed an earlier term's
		}
		top = max(top, t.fence)
		if t.lost {
			lost++
		}
	}
	rep.Add("terms_lost", fmt.Sprint(lost))
	rep.Add("faults_on_leader", fmt.Sprint(run.faults))
	return rep
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
			rep := checkElection(run)
			for _, term := range run.terms {
				t.Logf("term %+v", term)
			}
			lost := 0
			for _, term := range run.terms {
				if term.lost {
					lost++
				}
			}
			if run.faults < 4 || lost == 0 || len(run.terms) < 5 {
				t.Errorf("%d faults on a leader, %d terms, %d lost; want the four faults, and the pause to cost a term", run.faults, len(run.terms), lost)
			}
			s.finish(rep, ttl+time.Second, c.count)
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
	rep := checkElection(runElection(s, c, ttl, true))
	s.finish(rep, ttl+time.Second, c.count)
}
