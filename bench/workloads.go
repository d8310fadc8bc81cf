package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// throughputResult is one cell of an uncontended workload: goroutines
// each locking and unlocking a key of their own.
type throughputResult struct {
	Pairs         int64   `json:"pairs"`
	PairsPerSec   float64 `json:"pairsPerSec"`
	AllocsPerPair float64 `json:"allocsPerPair"`
	P50           float64 `json:"p50Micros,omitempty"` // latency of a pair, with one goroutine
	P99           float64 `json:"p99Micros,omitempty"`
	Errors        int64   `json:"errors"`
	FirstError    string  `json:"firstError,omitempty"`
	Leftover      int     `json:"leftoverKeys"`
	Fences        int     `json:"fenceCounters,omitempty"`
}

// throughput runs goroutines, each taking and releasing a key of its own
// (TryLock+Unlock) for d, on one client of lib. With one goroutine and
// timed set, it also records the latency of every pair.
func throughput(lib library, e env, goroutines int, d time.Duration, timed bool, count leftoverFunc) (r throughputResult) {
	c, err := lib.open(e)
	if err != nil {
		r.Errors, r.FirstError = 1, err.Error()
		return r
	}
	ctx := context.Background()
	mus := make([]mutex, goroutines)
	for i := range mus {
		mus[i] = c.mutex(fmt.Sprintf("k%d", i))
		// Warm up: connections dialled, scripts loaded.
		if err := pair(ctx, mus[i]); err != nil {
			r.Errors, r.FirstError = 1, err.Error()
			c.close()
			return r
		}
	}
	var (
		stop      atomic.Bool
		errs      atomic.Int64
		firstErr  sync.Once
		counts    = make([]int64, goroutines)
		latencies []time.Duration
		wg        sync.WaitGroup
	)
	if goroutines == 1 && timed {
		latencies = make([]time.Duration, 0, 1<<16)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i, m := range mus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(0)
			for !stop.Load() {
				var t0 time.Time
				if latencies != nil {
					t0 = time.Now()
				}
				if err := pair(ctx, m); err != nil {
					errs.Add(1)
					firstErr.Do(func() { r.FirstError = err.Error() })
					time.Sleep(time.Millisecond)
					continue
				}
				if latencies != nil {
					latencies = append(latencies, time.Since(t0))
				}
				n++
			}
			counts[i] = n
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	c.close()

	for _, n := range counts {
		r.Pairs += n
	}
	r.Errors = errs.Load()
	r.PairsPerSec = float64(r.Pairs) / elapsed.Seconds()
	if r.Pairs > 0 {
		r.AllocsPerPair = float64(after.Mallocs-before.Mallocs) / float64(r.Pairs)
	}
	if len(latencies) > 0 {
		slices.Sort(latencies)
		r.P50 = micros(percentile(latencies, 0.50))
		r.P99 = micros(percentile(latencies, 0.99))
	}
	if count != nil {
		r.Leftover, r.Fences = count(e.prefix)
	}
	return r
}

// pair takes and releases m's key once; the key is the goroutine's own,
// so it must be free.
func pair(ctx context.Context, m mutex) error {
	ok, err := m.tryLock(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("lock: %w", err)
	case !ok:
		return fmt.Errorf("lock: a key no one else uses was held")
	}
	if err := m.unlock(ctx); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

// leftoverFunc counts the keys left under a prefix once a cell is over:
// lock keys, and fence counters (kept by design).
type leftoverFunc func(prefix string) (locks, fences int)

// contentionResult is one cell of the contended workload: separate
// clients taking turns on one key.
type contentionResult struct {
	Acquisitions     int     `json:"acquisitions"`
	PerSec           float64 `json:"acquisitionsPerSec"`
	HandoffP50       float64 `json:"handoffP50Micros"` // release by one client -> next acquisition by another
	HandoffP99       float64 `json:"handoffP99Micros"`
	WaitP50          float64 `json:"waitP50Micros"` // Lock called -> Lock returned
	WaitP99          float64 `json:"waitP99Micros"`
	AcqPerHandoff    float64 `json:"acquisitionsPerHandoff"`
	Violations       int     `json:"mutualExclusionViolations"`
	LostUpdates      int     `json:"lostUpdates"`
	Errors           int     `json:"errors"`
	FirstError       string  `json:"firstError,omitempty"`
	Leftover         int     `json:"leftoverKeys"`
	LongestStarvedMs float64 `json:"longestWaitMillis"`
	CutShort         int     `json:"locksStillWaitingAfterEnd"` // Locks ended by the deadline 2s after the cell`
}

type acquisition struct {
	gen    int64
	client int
	at     time.Time
	wait   time.Duration
}

type release struct {
	gen int64
	at  time.Time
}

// contention runs clients separate clients of lib, each with one
// goroutine that locks the same key (Lock, waiting as the library does),
// updates a counter the lock must protect, unlocks, and pauses, for d.
func contention(lib library, e env, clients int, pause, d time.Duration, count leftoverFunc) (r contentionResult) {
	cs := make([]client, 0, clients)
	defer func() {
		for _, c := range cs {
			c.close()
		}
		if count != nil {
			r.Leftover, _ = count(e.prefix)
		}
	}()
	mus := make([]mutex, clients)
	for i := range clients {
		c, err := lib.open(e)
		if err != nil {
			r.Errors, r.FirstError = 1, err.Error()
			return r
		}
		cs = append(cs, c)
		mus[i] = c.mutex("shared")
		// Warm up, one client after another: connections, scripts.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = mus[i].lock(ctx)
		if err == nil {
			err = mus[i].unlock(ctx)
		}
		cancel()
		if err != nil {
			r.Errors, r.FirstError = 1, err.Error()
			return r
		}
	}

	var (
		inside     atomic.Int32
		counter    atomic.Int64 // read and written apart: only the lock keeps increments from being lost
		violations atomic.Int32
		errs       atomic.Int32
		cutShort   atomic.Int32 // Locks still waiting two seconds after the end
		firstErr   sync.Once
		acqs       = make([][]acquisition, clients)
		rels       = make([][]release, clients)
		wg         sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	// Callers stop after the Lock that returns past the end of the cell.
	// Their context's deadline, two seconds later, only ends a Lock that
	// would otherwise not return (rueidislock's did not, now and then,
	// with a context that never ends); cutting every caller short at the
	// end would cost each library differently (a rueidis connection with
	// a single caller waiting closes itself when that caller's deadline
	// passes).
	ctx, cancel := context.WithDeadline(context.Background(), end.Add(2*time.Second))
	defer cancel()
	for i, m := range mus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				t0 := time.Now()
				if err := m.lock(ctx); err != nil {
					if time.Now().Before(end) { // past the end: a Lock that did not return (see above)
						errs.Add(1)
						firstErr.Do(func() { r.FirstError = err.Error() })
					} else {
						cutShort.Add(1)
					}
					continue
				}
				at := time.Now()
				if inside.Add(1) != 1 {
					violations.Add(1)
				}
				gen := counter.Load()
				runtime.Gosched() // widen the window a lost update needs
				counter.Store(gen + 1)
				inside.Add(-1)
				acqs[i] = append(acqs[i], acquisition{gen: gen, client: i, at: at, wait: at.Sub(t0)})
				uctx, ucancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := m.unlock(uctx)
				ucancel()
				if err != nil {
					errs.Add(1)
					firstErr.Do(func() { r.FirstError = err.Error() })
				}
				rels[i] = append(rels[i], release{gen: gen, at: time.Now()})
				if pause > 0 {
					time.Sleep(pause)
				}
			}
		}()
	}
	wg.Wait()

	var all []acquisition
	for _, a := range acqs {
		all = append(all, a...)
	}
	r.Acquisitions = len(all)
	inTime := 0
	for _, a := range all {
		if a.at.Before(end) {
			inTime++
		}
	}
	r.PerSec = float64(inTime) / end.Sub(start).Seconds()
	r.Violations = int(violations.Load())
	r.LostUpdates = len(all) - int(counter.Load())
	r.Errors += int(errs.Load())
	r.CutShort = int(cutShort.Load())
	if len(all) == 0 {
		return r
	}
	n := int(counter.Load())
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
				relAt[x.gen] = x.at
			}
		}
	}
	var handoffs []time.Duration
	for g := 1; g < n; g++ {
		prev, cur := byGen[g-1], byGen[g]
		if prev == nil || cur == nil || prev.client == cur.client || relAt[g-1].IsZero() {
			continue
		}
		handoffs = append(handoffs, max(0, cur.at.Sub(relAt[g-1])))
	}
	waits := make([]time.Duration, len(all))
	for i, a := range all {
		waits[i] = a.wait
	}
	slices.Sort(waits)
	slices.Sort(handoffs)
	r.WaitP50, r.WaitP99 = micros(percentile(waits, 0.5)), micros(percentile(waits, 0.99))
	r.LongestStarvedMs = float64(waits[len(waits)-1]) / float64(time.Millisecond)
	if len(handoffs) > 0 {
		r.HandoffP50, r.HandoffP99 = micros(percentile(handoffs, 0.5)), micros(percentile(handoffs, 0.99))
		r.AcqPerHandoff = float64(len(all)) / float64(len(handoffs))
	} else {
		r.AcqPerHandoff = float64(len(all))
	}
	return r
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
