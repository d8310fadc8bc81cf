package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock/internal/contention"
)

// nameGen makes the resource names one worker locks: with fresh names a new
// one for every lock, prefix+"res/<worker>/<n>", as a service that locks
// per request or per job names them ("invoice/42"), at one allocation
// each; with reused names always prefix+"res/<worker>".
type nameGen struct {
	fresh bool
	buf   []byte
	base  int
	n     int64
	same  string
}

func newNameGen(prefix string, worker int, fresh bool) *nameGen {
	same := prefix + "res/" + strconv.Itoa(worker)
	buf := append([]byte(same), '/')
	return &nameGen{fresh: fresh, buf: buf, base: len(buf), same: same}
}

func (n *nameGen) next() string {
	if !n.fresh {
		return n.same
	}
	n.n++
	n.buf = strconv.AppendInt(n.buf[:n.base], n.n, 10)
	return string(n.buf)
}

// throughputResult is one cell of an uncontended workload: goroutines
// each locking and unlocking names no other goroutine uses.
type throughputResult struct {
	Pairs         int64     `json:"pairs"`
	PairsPerSec   float64   `json:"pairsPerSec"`
	AllocsPerPair float64   `json:"allocsPerPair"`       // every allocation of the process, the fresh name included
	P50           float64   `json:"p50Micros,omitempty"` // latency of a pair, with one goroutine
	P99           float64   `json:"p99Micros,omitempty"`
	Errors        int64     `json:"errors"`
	FirstError    string    `json:"firstError,omitempty"`
	Fenced        string    `json:"fenced,omitempty"` // lockkit only: "yes" if its locks carried a fence, else "no"
	Left          leftovers `json:"leftovers"`
}

// throughput runs goroutines, each taking and releasing names of its own
// (TryLock+Unlock) for d, on one client of lib: a fresh name for every
// pair, or the same one again and again. With timed set (meant for one
// goroutine) it also records the latency of every pair. It is a cell run
// in one slice, and its leftovers counted.
func throughput(lib library, e env, goroutines int, d time.Duration, fresh, timed bool, count leftoverFunc) throughputResult {
	c := openCell(lib, e, goroutines, fresh, timed)
	c.run(d)
	r := c.close()
	if count != nil {
		r.Left = count(e)
	}
	return r
}

// cell is one uncontended cell: a client of a library and its goroutines'
// workers, kept open across the slices the cell runs in, with what those
// slices measured so far.
type cell struct {
	c         client
	ws        []worker
	ns        []*nameGen
	timed     bool
	r         throughputResult // errors, fence, and after close the totals
	elapsed   time.Duration    // measured, over every slice
	mallocs   uint64
	latencies []time.Duration
}

// openCell opens a client of lib and warms it up: one pair per worker, so
// that connections are dialled and scripts loaded. A cell that failed to
// open runs no pairs and reports the error.
func openCell(lib library, e env, goroutines int, fresh, timed bool) *cell {
	cl := &cell{timed: timed}
	c, err := lib.open(e)
	if err != nil {
		cl.r.Errors, cl.r.FirstError = 1, err.Error()
		return cl
	}
	cl.c = c
	ctx := context.Background()
	cl.ws = make([]worker, goroutines)
	cl.ns = make([]*nameGen, goroutines)
	for i := range cl.ws {
		cl.ws[i], cl.ns[i] = c.worker(), newNameGen(e.prefix, i, fresh)
		if err := pair(ctx, cl.ws[i], cl.ns[i].next()); err != nil {
			cl.r.Errors, cl.r.FirstError = 1, err.Error()
			cl.ws = nil
			return cl
		}
	}
	if f, ok := cl.ws[0].(fenceReporter); ok {
		cl.r.Fenced = "no"
		if f.fenced() {
			cl.r.Fenced = "yes"
		}
	}
	if timed {
		cl.latencies = make([]time.Duration, 0, 1<<16)
	}
	return cl
}

// run runs the cell's goroutines for d, adding what they did to the cell.
func (cl *cell) run(d time.Duration) {
	if cl.ws == nil {
		return
	}
	ctx := context.Background()
	var (
		stop      atomic.Bool
		errs      atomic.Int64
		firstErr  sync.Once
		counts    = make([]int64, len(cl.ws))
		latencies [][]time.Duration
		wg        sync.WaitGroup
	)
	if cl.timed {
		latencies = make([][]time.Duration, len(cl.ws))
		latencies[0] = cl.latencies // one goroutine: no copy
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i, w := range cl.ws {
		wg.Go(func() {
			n := int64(0)
			for !stop.Load() {
				var t0 time.Time
				if cl.timed {
					t0 = time.Now()
				}
				if err := pair(ctx, w, cl.ns[i].next()); err != nil {
					errs.Add(1)
					firstErr.Do(func() {
						if cl.r.FirstError == "" {
							cl.r.FirstError = err.Error()
						}
					})
					time.Sleep(time.Millisecond)
					continue
				}
				if cl.timed {
					latencies[i] = append(latencies[i], time.Since(t0))
				}
				n++
			}
			counts[i] = n
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	cl.elapsed += time.Since(start)
	runtime.ReadMemStats(&after)
	cl.mallocs += after.Mallocs - before.Mallocs
	for _, n := range counts {
		cl.r.Pairs += n
	}
	cl.r.Errors += errs.Load()
	if cl.timed {
		cl.latencies = latencies[0]
		for _, l := range latencies[1:] {
			cl.latencies = append(cl.latencies, l...)
		}
	}
}

// discard forgets what the cell measured so far (its errors stay).
func (cl *cell) discard() {
	cl.r.Pairs, cl.elapsed, cl.mallocs = 0, 0, 0
	cl.latencies = cl.latencies[:0]
}

// close closes the cell's client and returns what its slices measured.
func (cl *cell) close() throughputResult {
	if cl.c != nil {
		cl.c.close()
		cl.c = nil
	}
	r := cl.r
	if cl.elapsed > 0 {
		r.PairsPerSec = float64(r.Pairs) / cl.elapsed.Seconds()
	}
	if r.Pairs > 0 {
		r.AllocsPerPair = float64(cl.mallocs) / float64(r.Pairs)
	}
	if len(cl.latencies) > 0 {
		slices.Sort(cl.latencies)
		r.P50 = micros(contention.Percentile(cl.latencies, 0.50))
		r.P99 = micros(contention.Percentile(cl.latencies, 0.99))
	}
	return r
}

// pair takes and releases name once; no one else uses it, so it must be
// free.
func pair(ctx context.Context, w worker, name string) error {
	ok, err := w.tryLock(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("lock: %w", err)
	case !ok:
		return fmt.Errorf("lock: %s, which no one else uses, was held", name)
	}
	if err := w.unlock(ctx); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

// contentionResult is one cell of the contended workload: workers, each
// with a client of its own, taking turns on one name.
type contentionResult struct {
	Acquisitions  int     `json:"acquisitions"`
	PerSec        float64 `json:"acquisitionsPerSec"`
	AcqPerHandoff float64 `json:"acquisitionsPerHandoff"` // 1 when the lock changes hands every time
	HandoffP50    float64 `json:"handoffP50Micros"`       // release by one worker -> next acquisition by another
	WaitP50       float64 `json:"waitP50Millis"`          // Lock called -> Lock returned
	WaitP99       float64 `json:"waitP99Millis"`
	WaitMax       float64 `json:"waitMaxMillis"`
	// WaitMaxAcqs is the most acquisitions by other workers during one
	// wait: a first-come-first-served line of n workers that all re-lock
	// at once shows n-1.
	WaitMaxAcqs int `json:"waitMaxAcquisitions"`
	// PassedOverMax is the most acquisitions, during one wait, by workers
	// that called Lock after the waiting one: 0 for a first-come-first-
	// served line; a poller's releaser that takes the lock back again and
	// again shows how often.
	PassedOverMax int       `json:"passedOverMax"`
	Served        int       `json:"workersServed"` // workers with at least one acquisition in the cell
	Workers       int       `json:"workers"`
	Round         float64   `json:"roundMillis"` // one full round of the line: workers / acquisitions per second
	Violations    int       `json:"mutualExclusionViolations"`
	LostUpdates   int       `json:"lostUpdates"`
	Errors        int       `json:"errors"`
	FirstError    string    `json:"firstError,omitempty"`
	CutShort      int       `json:"locksStillWaitingAfterEnd"` // Locks ended by the deadline 2s after the cell
	Left          leftovers `json:"leftovers"`
}

type acquisition struct {
	gen    int64
	worker int
	called time.Time
	at     time.Time
}

type release struct {
	gen   int64
	began time.Time // when Unlock was called: a handoff is timed from here
}

// contend runs workers, each with a client of lib of its own (as
// separate processes would), and one goroutine each that locks the same
// name (Lock, waiting as the library does), updates a counter the lock
// must protect, unlocks, and pauses, for d. Workers that take one of
// several permits (limiter) may be inside that many at once.
func contend(lib library, e env, workers int, pause, d time.Duration, count leftoverFunc) (r contentionResult) {
	r.Workers = workers
	cs := make([]client, 0, workers)
	defer func() {
		for _, c := range cs {
			c.close()
		}
		if count != nil {
			r.Left = count(e)
		}
	}()
	name := e.prefix + "res/shared"
	ws := make([]worker, workers)
	for i := range workers {
		c, err := lib.open(e)
		if err != nil {
			r.Errors, r.FirstError = 1, err.Error()
			return r
		}
		cs = append(cs, c)
		ws[i] = c.worker()
		// Warm up, one client after another: connections, scripts.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = ws[i].lock(ctx, name)
		if err == nil {
			err = ws[i].unlock(ctx)
		}
		cancel()
		if err != nil {
			r.Errors, r.FirstError = 1, err.Error()
			return r
		}
	}

	// Off the record first: every worker contends for a moment, so that
	// what a library sets up on its first wait (a subscription, a watch)
	// is set up before the cell is timed, as in a service that has run a
	// while. The warm-up's errors, violations and lost updates count; its
	// rates and waits do not.
	warm := contendFor(ws, name, pause, contentionWarmUp)
	r = contendFor(ws, name, pause, d)
	r.Errors += warm.Errors
	r.Violations += warm.Violations
	r.LostUpdates += warm.LostUpdates
	r.CutShort += warm.CutShort
	if r.FirstError == "" {
		r.FirstError = warm.FirstError
	}
	return r
}

// contentionWarmUp is how long the workers of a contention cell contend
// before the cell is timed.
const contentionWarmUp = 300 * time.Millisecond

// contendFor runs the workers ws on name for d, and returns what they did.
func contendFor(ws []worker, name string, pause, d time.Duration) (r contentionResult) {
	workers := len(ws)
	r.Workers = workers
	limit := holdersAtOnce(ws[0]) // more than one inside is a violation, except for permits
	var (
		inside     atomic.Int32
		counter    atomic.Int64 // read and written apart: only the lock keeps increments from being lost
		violations atomic.Int32
		errs       atomic.Int32
		cutShort   atomic.Int32 // Locks still waiting two seconds after the end
		firstErr   sync.Once
		acqs       = make([][]acquisition, workers)
		rels       = make([][]release, workers)
		wg         sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	// Workers stop after the Lock that returns past the end of the cell.
	// Their context's deadline, two seconds later, only ends a Lock that
	// would otherwise not return (rueidislock's did not, now and then,
	// with a context that never ends); cutting every caller short at the
	// end would cost each library differently (a rueidis connection with
	// a single caller waiting closes itself when that caller's deadline
	// passes).
	ctx, cancel := context.WithDeadline(context.Background(), end.Add(2*time.Second))
	defer cancel()
	for i, w := range ws {
		wg.Go(func() {
			for time.Now().Before(end) {
				called := time.Now()
				if err := w.lock(ctx, name); err != nil {
					if time.Now().Before(end) { // past the end: a Lock that did not return (see above)
						errs.Add(1)
						firstErr.Do(func() { r.FirstError = err.Error() })
					} else {
						cutShort.Add(1)
					}
					continue
				}
				at := time.Now()
				if inside.Add(1) > int32(limit) {
					violations.Add(1)
				}
				var gen int64
				if limit == 1 {
					gen = counter.Load()
					runtime.Gosched() // widen the window a lost update needs
					counter.Store(gen + 1)
				} else { // permits: several inside, so no lost-update check
					gen = counter.Add(1) - 1
				}
				inside.Add(-1)
				acqs[i] = append(acqs[i], acquisition{gen: gen, worker: i, called: called, at: at})
				uctx, ucancel := context.WithTimeout(context.Background(), 5*time.Second)
				unlocking := time.Now()
				err := w.unlock(uctx)
				ucancel()
				if err != nil {
					errs.Add(1)
					firstErr.Do(func() { r.FirstError = err.Error() })
				}
				rels[i] = append(rels[i], release{gen: gen, began: unlocking})
				if pause > 0 {
					time.Sleep(pause)
				}
			}
		})
	}
	wg.Wait()

	var all []acquisition
	for _, a := range acqs {
		all = append(all, a...)
	}
	r.Acquisitions = len(all)
	r.Violations = int(violations.Load())
	r.LostUpdates = len(all) - int(counter.Load())
	r.Errors += int(errs.Load())
	r.CutShort = int(cutShort.Load())
	r.fairness(all, rels, start, end)
	return r
}

// fairness sets the rates, waits and fairness figures of r from the
// acquisitions and releases of a cell that ran from start to end.
func (r *contentionResult) fairness(all []acquisition, rels [][]release, start, end time.Time) {
	inTime := 0
	served := map[int]bool{}
	for _, a := range all {
		if a.at.Before(end) {
			inTime++
			served[a.worker] = true
		}
	}
	r.Served = len(served)
	r.PerSec = float64(inTime) / end.Sub(start).Seconds()
	if r.PerSec > 0 {
		r.Round = float64(r.Workers) / r.PerSec * 1000
	}
	if len(all) == 0 {
		return
	}

	// Handoffs: consecutive acquisitions (by the counter each read) by
	// different workers, timed from the first's Unlock call to the
	// second's Lock return. (Timed from Unlock's return, a handoff could
	// end before it began: a store that hands the lock over as it
	// releases it wakes the next holder before the releaser hears back.)
	n := len(all)
	byGen := make([]*acquisition, n)
	for i := range all {
		if g := all[i].gen; g >= 0 && int(g) < n {
			byGen[g] = &all[i]
		}
	}
	relAt := make([]time.Time, n)
	for _, rs := range rels {
		for _, x := range rs {
			if x.gen >= 0 && int(x.gen) < n {
				relAt[x.gen] = x.began
			}
		}
	}
	var handoffs []time.Duration
	for g := 1; g < n; g++ {
		prev, cur := byGen[g-1], byGen[g]
		if prev == nil || cur == nil || prev.worker == cur.worker || relAt[g-1].IsZero() {
			continue
		}
		// Never negative but between holders of permits, which overlap
		// (the report shows no handoff for them).
		handoffs = append(handoffs, max(0, cur.at.Sub(relAt[g-1])))
	}
	slices.Sort(handoffs)
	r.HandoffP50 = micros(contention.Percentile(handoffs, 0.5))
	r.AcqPerHandoff = float64(n) / float64(max(1, len(handoffs)))

	// Waits, and what happened during each: the acquisitions by others
	// (all of them: the waiting worker holds nothing), and those by
	// workers that called Lock later.
	slices.SortFunc(all, func(a, b acquisition) int { return a.at.Compare(b.at) })
	waits := make([]time.Duration, n)
	for j, a := range all {
		waits[j] = a.at.Sub(a.called)
		first, _ := slices.BinarySearchFunc(all[:j], a.called, func(x acquisition, t time.Time) int {
			if x.at.After(t) {
				return 1
			}
			return -1
		})
		r.WaitMaxAcqs = max(r.WaitMaxAcqs, j-first)
		passed := 0
		for _, b := range all[first:j] {
			if b.called.After(a.called) {
				passed++
			}
		}
		r.PassedOverMax = max(r.PassedOverMax, passed)
	}
	slices.Sort(waits)
	r.WaitP50 = millis(contention.Percentile(waits, 0.5))
	r.WaitP99 = millis(contention.Percentile(waits, 0.99))
	r.WaitMax = millis(waits[n-1])
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
