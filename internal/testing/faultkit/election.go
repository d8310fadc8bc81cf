package faultkit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
)

// Election is an election scenario (issue #19): candidates campaign for
// one role with [lock.NewElection], each over a locker of its own, while
// faults strike whoever leads when each is due. A leader acts every 20ms,
// checking its term's context before each action, for 5 to 15 actions,
// and resigns — or, while a fault is on it, acts on until its term ends.
// [ElectionRun.Report] judges the run.
type Election struct {
	// Candidates are the candidates' lockers, over the same stores.
	Candidates []lock.Locker
	// TTL is the lease of a term, renewed in the background.
	TTL time.Duration
	// Duration is the length of the run: no campaign goes on after it.
	Duration time.Duration
	// Faults strike the leader of the moment, one after the other in the
	// order of their At.
	Faults []LeaderFault
	// Careless makes leaders ignore their term's context: the positive
	// control, whose terms must be seen to overlap.
	Careless bool
}

// LeaderFault is a fault on whoever leads at At (if nobody does then, on
// the next leader).
type LeaderFault struct {
	At, For time.Duration
	// Inject cuts the leader off from the stores (its connections stall,
	// as if its process were paused), and Heal, For later, restores it.
	// Both are required.
	Inject, Heal func(candidate int)
	// Kill makes the fault a kill: the leader acts no more and does not
	// resign; Heal runs once the run is over, and the term is resigned
	// then.
	Kill bool
}

// Term is one leadership term as its leader lived it. Times are offsets
// from the start of the run.
type Term struct {
	Candidate    int
	Fence        uint64
	Elected      time.Duration // Campaign returned
	LastAct      time.Duration // the last action taken as leader (Elected if none)
	Resigned     time.Duration // the leader stopped and went to resign
	ValidUntil   time.Duration // the latest end of the term's validity that its leader was given
	Lost, Killed bool          // the term ended with ErrLost; its leader was killed
}

// ElectionRun is the record of an election scenario.
type ElectionRun struct {
	Terms  []Term // in the order of election
	Faults int    // faults injected on a leader
}

// Run runs the scenario until e.Duration has passed or ctx ends, and
// returns its record once every candidate has stopped and every fault is
// healed. ctx also bounds the resignations at the end. It fails only if
// a candidate's election cannot be made (bad input).
func (e Election) Run(ctx context.Context) (ElectionRun, error) {
	elections := make([]*lock.Election, len(e.Candidates))
	for i, l := range e.Candidates {
		el, err := lock.NewElection(l, "leader", e.TTL)
		if err != nil {
			return ElectionRun{}, fmt.Errorf("faultkit: candidate %d: %w", i, err)
		}
		elections[i] = el
	}
	runCtx, cancel := context.WithTimeout(ctx, e.Duration)
	defer cancel()
	c := &campaign{e: e, base: time.Now(), faulted: make([]atomic.Bool, len(elections)), killed: make([]atomic.Bool, len(elections))}
	var wg sync.WaitGroup
	for i, el := range elections {
		wg.Go(func() { c.candidate(runCtx, ctx, i, el) })
	}
	c.strike(runCtx)
	<-runCtx.Done()
	wg.Wait()
	for _, heal := range c.dead {
		heal()
	}
	for _, t := range c.abandoned {
		_ = t.Resign(ctx)
	}
	slices.SortFunc(c.run.Terms, func(a, b Term) int { return cmp.Compare(a.Elected, b.Elected) })
	return c.run, nil
}

// campaign is the state of a running Election.
type campaign struct {
	e       Election
	base    time.Time
	leader  atomic.Int32  // the leading candidate + 1, or 0
	faulted []atomic.Bool // a fault is on this leader: it acts on until its term ends
	killed  []atomic.Bool

	mu        sync.Mutex // guards run and abandoned, and orders faulted against a leader's leaving
	run       ElectionRun
	abandoned []*lock.Term // the killed leaders' terms
	dead      []func()     // the killed candidates' heals (strike's goroutine only)
}

func (c *campaign) since() time.Duration { return time.Since(c.base) }

// candidate campaigns until the run ends or the candidate is killed;
// resignations use outer, which outlives the run.
func (c *campaign) candidate(ctx, outer context.Context, i int, el *lock.Election) {
	for ctx.Err() == nil && !c.killed[i].Load() {
		t, err := el.Campaign(ctx)
		if err != nil {
			contention.Sleep(ctx, 10*time.Millisecond) // a store failure: campaign again
			continue
		}
		rec := c.lead(ctx, i, t)
		c.mu.Lock()
		c.run.Terms = append(c.run.Terms, rec)
		if rec.Killed {
			c.abandoned = append(c.abandoned, t)
		}
		c.mu.Unlock()
		if !rec.Killed {
			_ = t.Resign(outer)
			contention.Sleep(ctx, time.Duration(rand.IntN(30))*time.Millisecond) // let the others campaign
		}
	}
}

// lead acts as leader for one term and returns its record.
func (c *campaign) lead(ctx context.Context, i int, t *lock.Term) Term {
	rec := Term{Candidate: i, Fence: t.Fence(), Elected: c.since()}
	rec.LastAct = rec.Elected
	c.leader.Store(int32(i + 1))
	tctx := t.Context()
	// The term's validity as the leader saw it while it acted: once the
	// term is lost, ValidUntil is cut to the loss, before the actions
	// that the validity given earlier allowed.
	var promised time.Duration
	for acts := 5 + rand.IntN(11); !c.killed[i].Load(); acts-- {
		if acts <= 0 && !c.stays(i) {
			break
		}
		now := c.since() // taken before the check: the action is at now
		valid := t.ValidUntil().Sub(c.base)
		if !c.e.Careless && tctx.Err() != nil {
			break
		}
		promised = max(promised, valid)
		rec.LastAct = now
		if !contention.Sleep(ctx, 20*time.Millisecond) {
			break
		}
	}
	c.leader.CompareAndSwap(int32(i+1), 0)
	rec.Resigned = c.since()
	rec.ValidUntil = max(promised, t.ValidUntil().Sub(c.base))
	rec.Lost = errors.Is(context.Cause(tctx), lock.ErrLost)
	rec.Killed = c.killed[i].Load()
	return rec
}

// stays reports whether leader i, done with its actions, must act on
// because a fault is on it; if not, it is no longer the leader to strike.
// Decided under mu, so that strike never picks a leader on its way out.
func (c *campaign) stays(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	stay := c.faulted[i].Load()
	if !stay {
		c.leader.CompareAndSwap(int32(i+1), 0)
	}
	return stay
}

// strike injects the faults, each on the leader of its moment, and heals
// them (a kill's heal is left to the end of the run).
func (c *campaign) strike(ctx context.Context) {
	faults := slices.SortedStableFunc(slices.Values(c.e.Faults), func(a, b LeaderFault) int { return cmp.Compare(a.At, b.At) })
	for _, f := range faults {
		if !contention.Sleep(ctx, time.Until(c.base.Add(f.At))) {
			return
		}
		i := c.pick(ctx)
		if i < 0 {
			return
		}
		if f.Kill {
			c.killed[i].Store(true)
			f.Inject(i)
			c.dead = append(c.dead, func() { f.Heal(i) })
			continue
		}
		f.Inject(i)
		contention.Sleep(ctx, f.For) // cut short at the end of the run
		f.Heal(i)
		c.faulted[i].Store(false)
	}
}

// pick waits for a leader and marks it faulted; -1 if the run ended first.
func (c *campaign) pick(ctx context.Context) int {
	for {
		c.mu.Lock()
		i := int(c.leader.Load()) - 1
		if i >= 0 {
			c.faulted[i].Store(true)
			c.run.Faults++
		}
		c.mu.Unlock()
		if i >= 0 {
			return i
		}
		if !contention.Sleep(ctx, 5*time.Millisecond) {
			return -1
		}
	}
}

// Report judges the run: the terms as the leaders acted on them (from
// election to their last action) and as the library bounded them (from
// election to the earlier of resignation and the end of the term's
// validity) must not overlap (Violations), and each term's fence must be
// above every earlier term's (StaleAccepted counts those that are not, so
// a store that does not fence fails). A term whose validity had ended
// when its leader heard of it (its goroutine ran late), which its leader
// could not act on, is left out of the fence order. Residue and
// LeakedGoroutines are left NotChecked for the caller; Extra has
// terms_lost and faults_on_leader.
func (r ElectionRun) Report(scenario, backend string) contention.Report {
	var acted, valid []contention.Claim
	for _, t := range r.Terms {
		c := contention.Claim{Client: t.Candidate, Resource: "leader", Token: fmt.Sprint(t.Fence, "/", t.Elected), Fence: t.Fence, Start: t.Elected}
		c.End = t.LastAct
		acted = append(acted, c)
		c.End = min(t.Resigned, t.ValidUntil)
		valid = append(valid, c)
	}
	a, v := contention.CheckOverlap(acted), contention.CheckOverlap(valid)
	rep := contention.Report{
		Scenario: scenario, Backend: backend,
		Acquisitions: len(r.Terms),
		Violations:   a.Violations + v.Violations,
		MaxHolders:   max(a.MaxHolders, v.MaxHolders),
		MaxOverlap:   max(a.MaxOverlap, v.MaxOverlap),
		FaultSuccess: math.NaN(),
		Residue:      contention.NotChecked, LeakedGoroutines: contention.NotChecked,
	}
	var top uint64
	for _, t := range r.Terms {
		if t.ValidUntil > t.Elected {
			if t.Fence <= top {
				rep.StaleAccepted++
			}
			top = max(top, t.Fence)
		}
	}
	rep.Add("terms_lost", fmt.Sprint(r.Lost()))
	rep.Add("faults_on_leader", fmt.Sprint(r.Faults))
	return rep
}

// Lost counts the terms that ended with ErrLost.
func (r ElectionRun) Lost() int {
	n := 0
	for _, t := range r.Terms {
		if t.Lost {
			n++
		}
	}
	return n
}
