package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockkit/lock"
)

var benchCommand = &command{
	name:         "bench",
	summary:      "measure lock+unlock throughput and latency",
	usage:        "bench [flags]",
	interspersed: true,
	doc: `Measures how many lock+unlock pairs per second the stores sustain, and the
latency of each: --workers goroutines share one locker (one connection
pool per store, as an application would) and each takes and releases a key
of its own in a loop for --duration, with one attempt per lock (TryLock),
so nothing waits for anything but the stores. The keys are named
lockctl-bench/RUN/N, RUN random; nothing is left behind but the stores'
fence counters, which every lock on them shares (on Redis the key
lockkit:fence).

Prints a live progress line on a terminal, then a table of latency
percentiles and the throughput; --json prints the same as JSON:
  {"stores": [...], "workers": N, "elapsed_ms": N, "ttl_ms": N,
   "pairs": N, "pairs_per_sec": N, "errors": N, "first_error": "...",
   "lock_ms": {"p50": N, "p90": N, "p99": N, "max": N},
   "unlock_ms": {...}, "pair_ms": {...}}
Latencies have a resolution of about 1.6%. A worker whose attempt fails
pauses before the next, from 1ms doubling up to 100ms while they keep
failing, so that stores that are down are not flooded. Exits 1 if no pair
succeeded.`,
	examples: `  lockctl bench                                  # the in-process memory store
  lockctl bench --store redis://localhost:6379 --workers 64 --duration 30s
  lockctl bench --store memcache://localhost:11211 --json > memcache.json`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		o := &benchOptions{stores: addStoreFlags(fs)}
		fs.IntVar(&o.workers, "workers", 16, "concurrent goroutines, each locking a key of its own")
		fs.DurationVar(&o.duration, "duration", 5*time.Second, "how long to run")
		fs.DurationVar(&o.ttl, "ttl", 10*time.Second, "lock TTL")
		fs.BoolVar(&o.json, "json", false, "print the results as JSON")
		return func(ctx context.Context, a *app, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			return a.bench(ctx, o)
		}
	},
}

type benchOptions struct {
	stores   *storeFlags
	workers  int
	duration time.Duration
	ttl      time.Duration
	json     bool
}

type benchReport struct {
	Stores      []string     `json:"stores"`
	Workers     int          `json:"workers"`
	ElapsedMs   float64      `json:"elapsed_ms"`
	TTLMillis   float64      `json:"ttl_ms"`
	Pairs       uint64       `json:"pairs"`
	PairsPerSec float64      `json:"pairs_per_sec"`
	Errors      int64        `json:"errors"`
	FirstError  string       `json:"first_error,omitempty"`
	Lock        latencyStats `json:"lock_ms"`
	Unlock      latencyStats `json:"unlock_ms"`
	Pair        latencyStats `json:"pair_ms"`
}

type latencyStats struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func statsOf(h *histogram) latencyStats {
	return latencyStats{P50: ms(h.quantile(0.5)), P90: ms(h.quantile(0.9)), P99: ms(h.quantile(0.99)), Max: ms(h.max)}
}

// benchWorker is what one worker measured.
type benchWorker struct {
	lock, unlock, pair histogram
}

func (a *app) bench(ctx context.Context, o *benchOptions) error {
	if o.workers < 1 {
		return usagef("--workers %d: want at least 1", o.workers)
	}
	for name, d := range map[string]time.Duration{"duration": o.duration, "ttl": o.ttl} {
		if err := positiveDuration(name, d); err != nil {
			return err
		}
	}
	set, err := a.openStores(ctx, o.stores, "memory://", a.stderr)
	if err != nil {
		return err
	}
	defer set.Close()
	locker, err := set.locker(nil)
	if err != nil {
		return &usageError{err: err}
	}
	runID := randomID()
	// A TTL the stores cannot honour is refused before the workers start,
	// as check refuses it, rather than failing every call for --duration.
	if _, err := probeTTL(ctx, set, fmt.Sprintf("lockctl-bench/%s/0", runID), o.ttl); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var pairs, errs atomic.Int64
	var firstErr atomic.Pointer[error]
	workers := make([]benchWorker, o.workers)
	start := time.Now()
	bar := startProgress(a.stderr, isTerminal(asFile(a.stderr)), func() string {
		el := time.Since(start)
		return fmt.Sprintf("bench  %v/%v  pairs %d (%s)  errors %d",
			el.Truncate(100*time.Millisecond), o.duration, pairs.Load(), rate(pairs.Load(), el), errs.Load())
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := &workers[w]
			resource := fmt.Sprintf("lockctl-bench/%s/%d", runID, w)
			fail := func(err error) {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, &err)
			}
			benchLoop(ctx, locker, resource, o.ttl, m, &pairs, fail)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	bar.Stop()

	var all benchWorker
	for i := range workers {
		all.lock.merge(&workers[i].lock)
		all.unlock.merge(&workers[i].unlock)
		all.pair.merge(&workers[i].pair)
	}
	rep := benchReport{
		Workers: o.workers, ElapsedMs: ms(elapsed), TTLMillis: ms(o.ttl),
		Pairs: all.pair.n, PairsPerSec: math.Round(10*float64(all.pair.n)/elapsed.Seconds()) / 10, Errors: errs.Load(),
		Lock: statsOf(&all.lock), Unlock: statsOf(&all.unlock), Pair: statsOf(&all.pair),
	}
	if e := firstErr.Load(); e != nil {
		rep.FirstError = (*e).Error()
	}
	for _, s := range set.specs {
		rep.Stores = append(rep.Stores, s.name)
	}
	if o.json {
		if err := printJSON(a.stdout, rep); err != nil {
			return err
		}
	} else if err := rep.print(a, o); err != nil {
		return err
	}
	if rep.Pairs == 0 {
		return exitWith(exitFailure, errors.New("no lock+unlock pair succeeded"))
	}
	return nil
}

// print prints the results as text, and returns the first write error.
func (r *benchReport) print(a *app, o *benchOptions) error {
	w := &errWriter{w: a.stdout}
	fmt.Fprintf(w, "lockctl bench: %s, a key each, %v, ttl %v\n", count(o.workers, "worker"), o.duration, o.ttl)
	fmt.Fprintf(w, "stores: %s\n\n", strings.Join(r.Stores, " "))
	fmt.Fprintf(w, "%-12s %10s %9s %9s %9s %9s\n", "", "count", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		name string
		s    latencyStats
	}{{"lock", r.Lock}, {"unlock", r.Unlock}, {"lock+unlock", r.Pair}} {
		fmt.Fprintf(w, "%-12s %10d %9s %9s %9s %9s\n", row.name, r.Pairs,
			fmtDur(msDur(row.s.P50)), fmtDur(msDur(row.s.P90)), fmtDur(msDur(row.s.P99)), fmtDur(msDur(row.s.Max)))
	}
	fmt.Fprintf(w, "\nthroughput   %.0f lock+unlock pairs/s\n", r.PairsPerSec)
	fmt.Fprintf(w, "errors       %d\n", r.Errors)
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error  %s\n", r.FirstError)
	}
	return w.err
}

// benchLoop takes and releases resource, one attempt at a time, until ctx
// ends: it records each pair in m and counts it in pairs, and tells fail
// of each failure. After a failure it pauses before the next attempt, from
// benchPauseMin doubling up to benchPauseMax while they keep failing: a
// store that fails at once (down, or refusing every call) would otherwise
// have each worker spin, burning a core and flooding the store.
func benchLoop(ctx context.Context, locker lock.Locker, resource string, ttl time.Duration, m *benchWorker, pairs *atomic.Int64, fail func(error)) {
	var pause time.Duration
	failed := func(err error) {
		fail(err)
		pause = min(max(2*pause, benchPauseMin), benchPauseMax)
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	for ctx.Err() == nil {
		t0 := time.Now()
		l, err := locker.TryLock(ctx, resource, ttl)
		t1 := time.Now()
		if err != nil {
			if ctx.Err() == nil {
				failed(err)
			}
			continue
		}
		// Release even when the run has ended, so no key is left.
		uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
		err = locker.Unlock(uctx, l)
		ucancel()
		t2 := time.Now()
		if err != nil {
			failed(err)
			continue
		}
		pause = 0
		m.lock.record(t1.Sub(t0))
		m.unlock.record(t2.Sub(t1))
		m.pair.record(t2.Sub(t0))
		pairs.Add(1)
	}
}

// The pauses of a bench worker after failed attempts (see benchLoop).
const (
	benchPauseMin = time.Millisecond
	benchPauseMax = 100 * time.Millisecond
)
