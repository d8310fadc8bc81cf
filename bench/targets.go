package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// target is one target of an issue, checked against this run: met when
// the median over the runs meets it.
type target struct {
	Issue    string `json:"issue"`
	Workload string `json:"workload"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// pairedBy returns f(a, b) for every pass in which both a and b ran.
func pairedBy[T any](as, bs []T, pass func(T) int, f func(a, b T) float64) []float64 {
	var out []float64
	for _, a := range as {
		for _, b := range bs {
			if pass(a) == pass(b) {
				out = append(out, f(a, b))
			}
		}
	}
	return out
}

func cellPass(c cellResult) int           { return c.Pass }
func contentionPass(c contentionCell) int { return c.Pass }

// ratios returns value(a)/value(b) per pass, for lib a and lib b with
// names in sec.
func ratios(sec *sectionResult, a, b, names string, value func(cellResult) float64) []float64 {
	return pairedBy(okCellsOf(sec, a, names), okCellsOf(sec, b, names), cellPass,
		func(x, y cellResult) float64 { return value(x) / value(y) })
}

// okCellsOf is cellsOf without the cells that failed (an error, or no pair
// done): their zeros would meet an "at most" target. The "no errors"
// target counts them.
func okCellsOf(sec *sectionResult, lib, names string) []cellResult {
	return filter(cellsOf(sec, lib, names), func(c cellResult) bool { return !c.failed() })
}

// okContentionOf is contentionOf without the cells that failed (an error,
// or no acquisition), as okCellsOf.
func okContentionOf(sec *sectionResult, lib string, pause time.Duration) []contentionCell {
	return filter(contentionOf(sec, lib, pause), func(c contentionCell) bool { return !c.failed() })
}

// failed reports whether an uncontended cell erred or did no pair.
func (c cellResult) failed() bool { return c.Errors > 0 || c.PairsPerSec == 0 }

// failed reports whether a contention cell erred or took no lock.
func (c contentionCell) failed() bool { return c.Errors > 0 || c.Acquisitions == 0 }

func pairsPerSec(c cellResult) float64 { return c.PairsPerSec }
func p50(c cellResult) float64         { return c.P50 }

// targets collects the targets of a run.
type targets []target

// notMeasured is the measurement of a target whose section ran without
// the rows it needs (left out by -libs, or renamed without updating the
// targets).
const notMeasured = "not measured: a row it needs is missing"

// check adds a target measured in sec by per-pass values, met when their
// median is; nothing when sec did not run.
func (ts *targets) check(sec *sectionResult, issue, workload, want string, vals []float64, format string, met func(float64) bool) *target {
	if sec == nil {
		return nil
	}
	t := target{Issue: issue, Workload: workload, Target: want, Measured: notMeasured}
	if len(vals) > 0 {
		t.Measured, t.Met = summary(format, vals), met(median(slices.Sorted(slices.Values(vals))))
	}
	*ts = append(*ts, t)
	return &(*ts)[len(*ts)-1]
}

func atLeast(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }
func atMost(x float64) func(float64) bool  { return func(v float64) bool { return v <= x } }

func checkTargets(r *results) []target {
	var ts targets
	redis := r.section("redis")
	for _, s := range []struct{ store, floor string }{
		{"lockkit", "rueidis raw (floor)"},
		{"lockkit (go-redis)", "go-redis raw"},
	} {
		ts.check(redis, "13, 14", s.store+", fenced (the default): 64 goroutines, fresh names", "≥ 0.9× "+s.floor+" (SET NX PX + compare-and-delete script)",
			ratios(redis, s.store, s.floor, fresh, pairsPerSec), "%.2f×", atLeast(0.9))
		ts.check(redis, "13", s.store+", fenced, against "+s.store+" NoFence: 64 goroutines, fresh names", "within 5% (≥ 0.95×)",
			ratios(redis, s.store, s.store+" NoFence", fresh, pairsPerSec), "%.2f×", atLeast(0.95))
	}
	ts.leftovers(r)

	// Redlock: fenced against unfenced.
	redlock1, redlock := r.section("redlock-1"), r.section("redlock")
	multi := "lockkit MultiLocker"
	// unfenced fails a target of fenced locks that carried no fence.
	unfenced := func(t *target, cs []cellResult) {
		if t != nil && len(cs) > 0 && fencedOf(cs) != "yes" {
			t.Measured += "; but its locks carried no fence"
			t.Met = false
		}
	}
	unfenced(ts.check(redlock1, "13", "Redlock, 5 masters, 1 goroutine, fresh names: "+multi+" fenced against NoFence", "latency (p50) ≤ 1.25×",
		ratios(redlock1, multi, multi+" NoFence", fresh, p50), "%.2f×", atMost(1.25)), cellsOf(redlock1, multi, fresh))
	unfenced(ts.check(redlock, "13", "Redlock, 5 masters, 64 goroutines, fresh names: "+multi+" fenced against NoFence", "throughput ≥ 0.8×",
		ratios(redlock, multi, multi+" NoFence", fresh, pairsPerSec), "%.2f×", atLeast(0.8)), cellsOf(redlock, multi, fresh))

	ts.contention(r)

	// In memory, one core: the issue's figures are for one name reused.
	mem := r.section("memory")
	locker := "lockkit SingleLocker"
	cs := okCellsOf(mem, locker, reused)
	ts.check(mem, "14", "memory store through "+locker+", one core (GOMAXPROCS 1), one name reused", "≤ 250 ns per pair",
		values(cs, nsPerPair), "%.0f ns", atMost(250))
	ts.check(mem, "14", "the same, allocations", "≤ 1 per pair",
		values(cs, func(c cellResult) float64 { return c.AllocsPerPair }), "%.2f", atMost(1.05))
	ts.check(mem, "14", "the same with a no-op Options.Hook", "≤ +20 ns per pair",
		pairedBy(okCellsOf(mem, locker+", no-op Hook", reused), okCellsOf(mem, locker, reused), cellPass,
			func(a, b cellResult) float64 { return nsPerPair(a) - nsPerPair(b) }), "%+.0f ns", atMost(20))

	mc := r.section("memcached")
	for _, lib := range []string{"lockkit", "lockkit WithServer", "lockkit NoFence"} {
		ts.check(mc, "14", "memcached, 64 goroutines, fresh names: "+lib, "≥ 0.9× gomemcache raw (add, gets, cas)",
			ratios(mc, lib, "gomemcache raw (floor)", fresh, pairsPerSec), "%.2f×", atLeast(0.9))
	}
	// WithServer sends two requests a pair where gomemcache's floor sends
	// three: its own floor is the raw meta commands it sends.
	ts.check(mc, "14", "memcached, 64 goroutines, fresh names: lockkit WithServer, fenced", "≥ 0.9× raw meta commands (ms, md by CAS id; no fence)",
		ratios(mc, "lockkit WithServer", "raw meta commands (ms ME c, md C)", fresh, pairsPerSec), "%.2f×", atLeast(0.9))

	etcd := r.section("etcd")
	ts.check(etcd, "15", "etcd, 64 goroutines, fresh names: lockkit (etcd)", "≥ etcd's concurrency.Mutex",
		ratios(etcd, "lockkit (etcd)", "etcd concurrency.Mutex", fresh, pairsPerSec), "%.2f×", atLeast(1))
	ec := r.section("etcd-contention")
	for _, pause := range pausesOf(ec) {
		ts.check(ec, "15", "etcd contention, 16 workers, "+pauseText(pause)+": handoff p50, lockkit (etcd) over concurrency.Mutex", "< 1× (a faster handoff)",
			pairedBy(okContentionOf(ec, "lockkit (etcd)", pause), okContentionOf(ec, "etcd concurrency.Mutex", pause), contentionPass,
				func(a, b contentionCell) float64 { return a.HandoffP50 / b.HandoffP50 }), "%.2f×", func(v float64) bool { return v < 1 })
	}

	pg := r.section("postgres")
	for _, lib := range []string{"lockkit", "lockkit NoFence"} {
		ts.check(pg, "16", "PostgreSQL, 64 goroutines, fresh names: "+lib, "≥ 0.9× raw INSERT … ON CONFLICT",
			ratios(pg, lib, "raw INSERT … ON CONFLICT (floor)", fresh, pairsPerSec), "%.2f×", atLeast(0.9))
	}

	// Every lockkit cell ran without an error (those that did not are
	// left out of the ratios above).
	var failed []string
	ran := 0
	for _, sec := range r.Sections {
		for _, c := range sec.Throughput {
			if strings.HasPrefix(c.Library, "lockkit") {
				ran++
				if c.failed() {
					failed = append(failed, fmt.Sprintf("%s %s %s pass %d", sec.Key, c.Library, c.Names, c.Pass))
				}
			}
		}
		for _, c := range sec.Contention {
			if strings.HasPrefix(c.Library, "lockkit") {
				ran++
				if c.failed() {
					failed = append(failed, fmt.Sprintf("%s %s pause %v pass %d", sec.Key, c.Library, c.Pause, c.Pass))
				}
			}
		}
	}
	if ran > 0 {
		measured := fmt.Sprintf("%d failed of %d", len(failed), ran)
		if len(failed) > 0 {
			measured += ": " + strings.Join(failed, "; ")
		}
		ts = append(ts, target{"—", "every lockkit cell", "no errors, and something done", measured, len(failed) == 0})
	}

	// Correctness, in every contention cell of every library.
	cells, bad := 0, 0
	for _, sec := range r.Sections {
		for _, c := range sec.Contention {
			cells++
			bad += c.Violations + c.LostUpdates
		}
	}
	if cells > 0 {
		ts = append(ts, target{"—", "every contention cell, every library", "no mutual-exclusion violation, no lost update",
			fmt.Sprintf("%d in %d cells", bad, cells), bad == 0})
	}
	return ts
}

// leftovers checks that lockkit leaves nothing per resource on Redis.
func (ts *targets) leftovers(r *results) {
	var locks, perResource, serverWide, cells int
	var failed []string
	for _, key := range []string{"redis", "redlock", "redlock-1"} {
		sec := r.section(key)
		if sec == nil {
			continue
		}
		for _, c := range sec.Throughput {
			if !strings.HasPrefix(c.Library, "lockkit") {
				continue
			}
			cells++
			if c.Left.Err != "" {
				failed = append(failed, c.Library)
			}
			locks, perResource, serverWide = max(locks, c.Left.Locks), max(perResource, c.Left.PerResource), max(serverWide, c.Left.ServerWide)
		}
	}
	if cells == 0 {
		return
	}
	measured := fmt.Sprintf("at most %d lock keys and %d keys of per-resource state in one cell; %d server-wide (%d cells)", locks, perResource, serverWide, cells)
	if len(failed) > 0 {
		measured += "; not counted in " + strings.Join(failed, ", ")
	}
	*ts = append(*ts, target{"13", "lockkit on Redis, every uncontended cell (single and Redlock, fresh and reused names)",
		"0 keys left per resource once every lock is released", measured, locks == 0 && perResource == 0 && len(failed) == 0})
}

// contention checks the contention targets of issue 14.
func (ts *targets) contention(r *results) {
	sec := r.section("contention")
	ours := okContentionOf(sec, "lockkit", 0)
	// The best poller of each run: the one with the most acquisitions
	// among those that served every worker (a poller that leaves workers
	// with nothing barely counts their waits, so its p99 says little).
	best := map[int]contentionCell{}
	for _, lib := range pollersOf(sec) {
		for _, c := range okContentionOf(sec, lib, 0) {
			if b, ok := best[c.Pass]; c.Served == c.Workers && (!ok || c.PerSec > b.PerSec) {
				best[c.Pass] = c
			}
		}
	}
	var bests []contentionCell
	var names []string
	for _, c := range ours {
		if b, ok := best[c.Pass]; ok {
			bests = append(bests, b)
			if !slices.Contains(names, b.Library) {
				names = append(names, b.Library)
			}
		}
	}
	of := ""
	if len(names) > 0 {
		of = " (the best poller of each run: " + strings.Join(names, ", ") + ")"
	}
	w := "16 workers on one name, each its own client, re-lock at once: lockkit"
	ts.check(sec, "14", w+", acquisitions/s over the best poller's (the fastest that served every worker)"+of, "≥ 0.9×",
		pairedBy(ours, bests, contentionPass, func(a, b contentionCell) float64 { return a.PerSec / b.PerSec }), "%.2f×", atLeast(0.9))
	ts.check(sec, "14", w+", p99 wait over the same poller's", "≤ 0.5×",
		pairedBy(ours, bests, contentionPass, func(a, b contentionCell) float64 { return a.WaitP99 / b.WaitP99 }), "%.2f×", atMost(0.5))
	if len(ours) > 0 && len(bests) == 0 && len(pollersOf(sec)) > 0 {
		// The rows are there, but no poller served every worker in any
		// run (a short or starved run): there is nothing to compare with,
		// which is a result, not a missing row (the two targets just
		// checked).
		for i := len(*ts) - 2; i < len(*ts); i++ {
			(*ts)[i].Measured = "no poller served every worker in any run: nothing to compare with"
		}
	}
	ts.check(sec, "14", w+", the most acquisitions by workers that called Lock later, during one wait",
		"≤ ~10 (no worker waits more than about 10 handoffs beyond its turn)",
		values(ours, func(c contentionCell) float64 { return float64(c.PassedOverMax) }), "%.0f", atMost(10))

	sec64 := r.section("contention-64")
	ts.check(sec64, "14", "64 workers on one name, pause 1ms: lockkit's p99 wait, in rounds of the line (64 / acquisitions per second)", "≤ 2",
		values(okContentionOf(sec64, "lockkit", time.Millisecond), func(c contentionCell) float64 { return c.WaitP99 / c.Round }),
		"%.2f rounds", atMost(2))

	mc := r.section("memcached-contention")
	for _, pause := range pausesOf(mc) {
		for _, lib := range []string{"lockkit", "lockkit WithServer"} {
			ours := okContentionOf(mc, lib, pause)
			w := "memcached, 16 workers on one name, " + pauseText(pause) + ": " + lib
			ts.check(mc, "14", w+"'s p99 wait over a simple 10ms poller's", "≤ 1×",
				pairedBy(ours, okContentionOf(mc, "gomemcache raw poller 10ms", pause), contentionPass,
					func(a, b contentionCell) float64 { return a.WaitP99 / b.WaitP99 }), "%.2f×", atMost(1))
			ts.check(mc, "14", w+", workers served", "every worker (16)",
				values(ours, func(c contentionCell) float64 { return float64(c.Served) }), "%.0f", atLeast(16))
		}
	}
}

func pollersOf(sec *sectionResult) []string {
	if sec == nil {
		return nil
	}
	return sec.Pollers
}

func pausesOf(sec *sectionResult) []time.Duration {
	if sec == nil {
		return nil
	}
	return sec.Pauses
}

func pauseText(pause time.Duration) string {
	if pause == 0 {
		return "re-lock at once"
	}
	return "pause " + pause.String()
}
