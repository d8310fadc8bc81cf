package faultsuite

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
)

// ElectionFaults is the election scenario (issue #19) that the fault
// tiers of the stores in other modules run: candidates reaching the
// stores through fault proxies, whose leader of the moment is paused (its
// connections held both ways), then has its renewals slowed (replies late
// by 60% of a TTL), then its replies lost (requests take effect, replies
// never come), and at last is killed (held for good; it never resigns).
// Each fault has its positive control: a run with that fault alone whose
// leaders ignore their term's context (faultkit.Election.Careless), so
// that the faulted one acts on while its successor leads.
type ElectionFaults struct {
	// TTL is a term's lease; Start, when the first fault strikes.
	TTL, Start time.Duration
	// Pause is how long the pause lasts; Long, how long slow renewals and
	// lost replies do. Each must outlast the faulted leader's lease by
	// long enough for the store to let it go and another to be elected.
	Pause, Long time.Duration
}

// leaderFault is a fault of the scenario, which control runs alone.
type leaderFault struct {
	control string
	inject  func(l Links, at time.Duration) faultkit.LeaderFault
}

// faults are the faults but the kill.
func (p ElectionFaults) faults() []leaderFault {
	return []leaderFault{
		{"election-careless-leader", func(l Links, at time.Duration) faultkit.LeaderFault { return l.Pause(at, p.Pause) }},
		{"election-careless-leader-slow-renewals", func(l Links, at time.Duration) faultkit.LeaderFault {
			return l.SlowReplies(at, p.Long, p.TTL*6/10)
		}},
		{"election-careless-leader-lost-replies", func(l Links, at time.Duration) faultkit.LeaderFault { return l.LoseReplies(at, p.Long) }},
	}
}

// ElectionScenario is the name of the scenario's run, with every fault.
const ElectionScenario = "election-faults"

// Runs names the runs: the scenario, then each fault's control.
func (p ElectionFaults) Runs() []string {
	names := []string{ElectionScenario}
	for _, f := range p.faults() {
		names = append(names, f.control)
	}
	return names
}

// Run runs the run named name (one of Runs) on candidates whose
// connections to the stores are links, logs its terms on t, and returns
// its judgement (see faultkit.ElectionRun.Report), whose Residue and
// LeakedGoroutines are the caller's to fill in and check, with whether
// violations are wanted (a control) or not. The scenario fails t if a
// fault found no leader to strike or no term was lost.
func (p ElectionFaults) Run(ctx context.Context, t testing.TB, name, backend string, candidates []lock.Locker, links Links) contention.Report {
	t.Helper()
	e := faultkit.Election{Candidates: candidates, TTL: p.TTL, Careless: name != ElectionScenario}
	at := p.Start
	for _, f := range p.faults() {
		switch name {
		case ElectionScenario:
			e.Faults = append(e.Faults, f.inject(links, at))
			at += e.Faults[len(e.Faults)-1].For + p.TTL/2
		case f.control:
			e.Faults = []faultkit.LeaderFault{f.inject(links, at)}
			e.Duration = at + e.Faults[0].For + p.TTL // it ends as its fault heals
		}
	}
	if !e.Careless {
		e.Faults = append(e.Faults, links.Kill(at))
		e.Duration = at + 3*p.TTL // time to elect the next leader
	}
	if e.Duration == 0 {
		t.Fatalf("no election run %q: want one of %q", name, p.Runs())
	}
	run, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range run.Terms {
		t.Logf("term %+v", term)
	}
	rep := run.Report(name, backend)
	if !e.Careless && (run.Faults != len(e.Faults) || run.Lost() == 0 || len(run.Terms) <= len(e.Faults)) {
		t.Errorf("%d faults on a leader, %d terms, %d lost; want the %d faults, and the pause to cost a term: %s",
			run.Faults, len(run.Terms), run.Lost(), len(e.Faults), rep.Line())
	}
	return rep
}
