package main

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A handoff is timed from the releaser's Unlock call: a store that hands
// the lock over as it releases it wakes the next holder before the
// releaser hears back, and timed from Unlock's return such a handoff
// took less than nothing (it was counted as 0).
func TestHandoffTimedFromUnlockCall(t *testing.T) {
	t0 := time.Now()
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	all := []acquisition{
		{gen: 0, worker: 0, called: at(0), at: at(10)},
		{gen: 1, worker: 1, called: at(5), at: at(130)}, // Unlock of gen 0 called at 100, and returned at 150
		{gen: 2, worker: 0, called: at(160), at: at(240)},
	}
	rels := [][]release{
		{{gen: 0, began: at(100)}, {gen: 2, began: at(260)}},
		{{gen: 1, began: at(200)}},
	}
	var r contentionResult
	r.Workers = 2
	r.fairness(all, rels, t0, at(1000))
	if r.HandoffP50 != 30 && r.HandoffP50 != 40 {
		t.Errorf("handoff p50 = %vµs; want 30 or 40 (the two handoffs, from each Unlock call)", r.HandoffP50)
	}
	if r.AcqPerHandoff != 1.5 {
		t.Errorf("acquisitions per handoff = %v; want 1.5 (3 acquisitions, 2 handoffs)", r.AcqPerHandoff)
	}
}

// Every cell of a names row takes a new place each pass: over as many
// passes as the row has cells, each runs once in every place.
func TestRowInPassOrder(t *testing.T) {
	var items []item
	libs := []string{"floor", "a", "b", "c"}
	for _, l := range libs {
		items = append(items, item{library{name: l}, fresh}, item{library{name: l}, reused})
	}
	for _, row := range []string{fresh, reused} {
		places := map[string]map[int]bool{}
		for pass := range len(libs) {
			group := rowInPassOrder(items, row, pass)
			if len(group) != len(libs) {
				t.Fatalf("row %s, pass %d: %d cells; want %d", row, pass, len(group), len(libs))
			}
			for i, it := range group {
				if it.names != row {
					t.Errorf("row %s, pass %d: a cell of row %s", row, pass, it.names)
				}
				if places[it.lib.name] == nil {
					places[it.lib.name] = map[int]bool{}
				}
				places[it.lib.name][i] = true
			}
		}
		for _, l := range libs {
			if len(places[l]) != len(libs) {
				t.Errorf("row %s: %s ran in places %v over %d passes; want each of 0..%d once", row, l, places[l], len(libs), len(libs)-1)
			}
		}
	}
}

// A lockkit cell that failed (an error, nothing done) is left out of the
// ratios, where its zeros would meet an "at most" target, and fails the
// target that every lockkit cell ran.
func TestFailedCellMeetsNoTarget(t *testing.T) {
	cell := func(lib string, pass int, nsPerPair float64, errs int64) cellResult {
		c := cellResult{Library: lib, Names: reused, Pass: pass}
		c.Errors = errs
		if nsPerPair > 0 {
			c.PairsPerSec = 1e9 / nsPerPair
		}
		return c
	}
	r := &results{Sections: []*sectionResult{{
		Key: "memory", Kind: kindOneCore, Floor: "map+mutex (floor)",
		Throughput: []cellResult{
			cell("lockkit SingleLocker", 1, 0, 1), cell("lockkit SingleLocker, no-op Hook", 1, 300, 0),
			cell("lockkit SingleLocker", 2, 0, 1), cell("lockkit SingleLocker, no-op Hook", 2, 300, 0),
			cell("lockkit SingleLocker", 3, 400, 0), cell("lockkit SingleLocker, no-op Hook", 3, 410, 0),
		},
	}}}
	var memory, hook, every *target
	ts := checkTargets(r)
	for i := range ts {
		switch tg := &ts[i]; {
		case strings.HasPrefix(tg.Workload, "memory store"):
			memory = tg
		case strings.HasSuffix(tg.Workload, "no-op Options.Hook"):
			hook = tg
		case tg.Workload == "every lockkit cell":
			every = tg
		}
	}
	if memory == nil || hook == nil || every == nil {
		t.Fatalf("targets %+v; want the memory, hook and every-cell targets", ts)
	}
	if memory.Met || memory.Measured != "400 ns" {
		t.Errorf("memory target with two failed passes of three: %q, met %v; want 400 ns (the pass that ran), not met", memory.Measured, memory.Met)
	}
	if !hook.Met || hook.Measured != "+10 ns" {
		t.Errorf("hook target: %q, met %v; want +10 ns from the pass where both ran, met", hook.Measured, hook.Met)
	}
	if every.Met || !strings.HasPrefix(every.Measured, "2 failed of 6") {
		t.Errorf("every-cell target: %q, met %v; want 2 failed of 6, not met", every.Measured, every.Met)
	}
}

// slowFirstWait is a library whose workers share one in-process lock and
// pay a setup cost the first time each has to wait (as a subscription or
// a watch is set up on a first wait), and a round trip per call.
func slowFirstWait() library {
	held := make(chan struct{}, 1)
	return library{name: "slow first wait", open: func(env) (client, error) {
		return clientFuncs{w: func() worker { return &slowFirstWaitWorker{held: held} }}, nil
	}}
}

const (
	firstWaitSetup = 100 * time.Millisecond
	roundTrip      = 50 * time.Microsecond
)

type slowFirstWaitWorker struct {
	held   chan struct{}
	waited bool
}

func (w *slowFirstWaitWorker) tryLock(context.Context, string) (bool, error) {
	time.Sleep(roundTrip)
	select {
	case w.held <- struct{}{}:
		return true, nil
	default:
		return false, nil
	}
}

func (w *slowFirstWaitWorker) lock(ctx context.Context, name string) error {
	if ok, err := w.tryLock(ctx, name); ok || err != nil {
		return err
	}
	if !w.waited {
		w.waited = true
		time.Sleep(firstWaitSetup)
	}
	select {
	case w.held <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *slowFirstWaitWorker) unlock(context.Context) error {
	time.Sleep(roundTrip)
	<-w.held
	return nil
}

// A contention cell is timed once its workers have contended for a
// while: a library's first wait, which sets up what later waits use,
// is not among the cell's waits (it was, and made the max wait of the
// libraries that wake waiters).
func TestContentionWarmsTheWaitUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := contend(slowFirstWait(), env{}, 4, 0, time.Second, nil)
		if r.Acquisitions == 0 || r.Errors != 0 {
			t.Fatalf("contend: %d acquisitions, %d errors (%s)", r.Acquisitions, r.Errors, r.FirstError)
		}
		if max := time.Duration(r.WaitMax * float64(time.Millisecond)); max >= firstWaitSetup {
			t.Errorf("max wait %v; want less than the %v a worker's first wait costs, paid off the record", max, firstWaitSetup)
		}
	})
}

// A lockkit contention cell that failed meets no contention target: its
// zeros (no wait, nobody passed over, no handoff) would meet them all.
func TestFailedContentionCellMeetsNoTarget(t *testing.T) {
	cell := func(lib string, acqs, errs int) contentionCell {
		return contentionCell{Library: lib, Pass: 1, contentionResult: contentionResult{
			Acquisitions: acqs, Errors: errs, PerSec: float64(acqs), WaitP99: 10, Served: 16, Workers: 16, HandoffP50: 100}}
	}
	r := &results{Sections: []*sectionResult{{
		Key: "contention", Kind: kindContention, Pollers: []string{"poller"},
		Contention: []contentionCell{cell("lockkit", 0, 1), cell("poller", 1000, 0)},
	}}}
	r.Sections[0].Contention[0].WaitP99 = 0
	for _, tg := range checkTargets(r) {
		if tg.Met && tg.Issue == "14" {
			t.Errorf("target %q met (%s) by a lockkit cell that failed", tg.Workload, tg.Measured)
		}
	}
}
