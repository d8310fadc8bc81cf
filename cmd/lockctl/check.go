package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
)

var checkCommand = &command{
	name:         "check",
	summary:      "check that stores keep mutual exclusion under contention, and how fast",
	usage:        "check [flags]",
	interspersed: true,
	doc: `Runs the contention test of lockkit's own test suite against the stores:
--workers clients, each with its own connections, fight over --resources
resources for --duration. Each holder reads a shared counter, waits --hold,
checks its lock is still valid and writes the counter plus one. Every
operation is recorded, and at the end:

  - the overlap checker looks for two holders of one resource at once
    (from the moment Lock returned to the release, or the end of the
    validity the library reported, whichever came first);
  - the lost-update counter compares the writes made with the count
    reached: an update lost to interleaving shows two holders too;
  - with a store that fences, writes carrying an older fence than one
    already accepted are counted as stale.

--hold must be shorter than the lock's validity (--ttl less the drift
allowance and the stores' granularity): a holder whose lock ran out before
it could write skips its write (counted as skipped), and a --hold that
leaves no holder time to write is refused.

It prints acquisitions, violations, lost updates, acquisition latency
(waiting included) and handoff time (from a release to the moment the next
holder's Lock returned), with a live progress line on a terminal. It exits
0 if nothing was violated, 3 if anything was, 1 if no lock could be taken.

Its resources are named lockctl-check/RUN/N, RUN random, so runs do not
meet each other or your locks; nothing is left behind but the stores' fence
counters, which every lock on them shares (on Redis the key lockkit:fence,
one per hash slot on a cluster).

Without --store (or $LOCKCTL_STORES) it checks the in-process memory store,
so it works on a machine with nothing installed. Interrupt it (Ctrl-C) to
stop early and get the summary of what ran.`,
	examples: `  # Nothing installed: the in-memory store.
  go run github.com/lockkit/lock/cmd/lockctl@latest check

  # Your Redis, with 32 workers for a minute.
  lockctl check --store redis://:secret@redis.internal:6379 --workers 32 --duration 1m

  # A Redlock over three memcached servers (TTLs round up to whole seconds).
  lockctl check --store memcache://mc1:11211 --store memcache://mc2:11211 --store memcache://mc3:11211`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		o := &checkOptions{stores: addStoreFlags(fs)}
		fs.IntVar(&o.workers, "workers", 16, "concurrent clients, each with its own connections")
		fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to run")
		fs.DurationVar(&o.ttl, "ttl", 5*time.Second, "lock TTL")
		fs.DurationVar(&o.hold, "hold", time.Millisecond, "time each holder spends between reading and writing the counter")
		fs.DurationVar(&o.pause, "pause", time.Millisecond, "time a worker waits after a release before its next Lock (0: at once, which lets the releaser take it back)")
		fs.IntVar(&o.resources, "resources", 1, "number of resources the workers fight over")
		fs.BoolVar(&o.json, "json", false, "print the summary as JSON")
		return func(ctx context.Context, a *app, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			return a.check(ctx, o)
		}
	},
}

type checkOptions struct {
	stores    *storeFlags
	workers   int
	duration  time.Duration
	ttl       time.Duration
	hold      time.Duration
	pause     time.Duration
	resources int
	json      bool
}

// checkReport is the summary of a check, and its JSON form.
type checkReport struct {
	Stores       []string   `json:"stores"`
	Workers      int        `json:"workers"`
	Resources    int        `json:"resources"`
	TTLMillis    float64    `json:"ttl_ms"`
	HoldMillis   float64    `json:"hold_ms"`
	PauseMillis  float64    `json:"pause_ms"`
	ElapsedMs    float64    `json:"elapsed_ms"`
	Acquisitions int        `json:"acquisitions"`
	Unknown      int        `json:"unknown_outcomes"`
	Failed       int64      `json:"failed_calls"`
	Violations   int        `json:"violations"`
	MaxHolders   int        `json:"max_holders"`
	MaxOverlapMs float64    `json:"max_overlap_ms"`
	LostUpdates  int        `json:"lost_updates"`
	Writes       int        `json:"writes"`
	Skipped      int        `json:"skipped_writes"`
	FencedWrites int        `json:"fenced_writes"`
	StaleWrites  int        `json:"stale_writes_accepted"`
	Acquire      percentile `json:"acquire_ms"`
	Handoff      percentile `json:"handoff_ms"`
	Handoffs     int        `json:"handoffs"`
	OK           bool       `json:"ok"`
	Problem      string     `json:"problem,omitempty"`
}

type percentile struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

func (a *app) check(ctx context.Context, o *checkOptions) error {
	switch {
	case o.workers < 1:
		return usagef("--workers %d: want at least 1", o.workers)
	case o.resources < 1:
		return usagef("--resources %d: want at least 1", o.resources)
	case o.pause < 0:
		return usagef("--pause %v: want a duration >= 0", o.pause)
	}
	for name, d := range map[string]time.Duration{"duration": o.duration, "ttl": o.ttl, "hold": o.hold} {
		if err := positiveDuration(name, d); err != nil {
			return err
		}
	}
	first, err := a.openStores(ctx, o.stores, "memory://", a.stderr)
	if err != nil {
		return err
	}
	var firstOnce sync.Once
	runID := randomID()
	resources := make([]string, o.resources)
	for i := range resources {
		resources[i] = fmt.Sprintf("lockctl-check/%s/%d", runID, i)
	}
	// A first locker checks the TTL against the stores (memcached needs
	// more than a second) before any worker starts.
	validity, err := probeTTL(ctx, first, resources[0], o.ttl)
	if err == nil && validity > 0 && o.hold >= validity {
		err = usagef("--hold %v: not shorter than the lock's validity (%v of the %v --ttl, the drift allowance and the stores' granularity taken off): every holder's lock would run out before it writes, and nothing would be checked; lower --hold or raise --ttl", o.hold, validity.Round(10*time.Microsecond), o.ttl)
	}
	if err != nil {
		first.Close()
		return err
	}
	var stats callStats
	cfg := contention.Config{
		Workers:   o.workers,
		Resources: resources,
		TTL:       o.ttl,
		Hold:      o.hold,
		Pause:     o.pause,
		Duration:  o.duration,
		// A Lock call waiting longer than this is recorded as an unknown
		// outcome, so a store that stops answering ends the run soon.
		LockTimeout: 2 * o.ttl,
		NewLocker: func(i int) (lock.Locker, func(), error) {
			set := first
			used := false
			firstOnce.Do(func() { used = true })
			if !used {
				var err error
				if set, err = first.reopen(ctx, o.stores); err != nil {
					return nil, nil, err
				}
			}
			l, err := set.locker(nil)
			if err != nil {
				set.Close()
				return nil, nil, err
			}
			return &counting{Locker: l, stats: &stats}, set.Close, nil
		},
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	bar := startProgress(a.stderr, isTerminal(asFile(a.stderr)), func() string {
		el := time.Since(start)
		return fmt.Sprintf("check  %v/%v  acquisitions %d (%s)  failed calls %d",
			el.Truncate(100*time.Millisecond), o.duration, stats.ok.Load(), rate(stats.ok.Load(), el), stats.failed.Load())
	})
	res, err := contention.Run(ctx, cfg)
	bar.Stop()
	if err != nil {
		if errors.Is(err, lock.ErrInvalid) {
			return &usageError{err: err}
		}
		return err
	}

	rep := res.Report("check", "")
	ops := res.Recorder.Ops()
	handoffs := handoffTimes(ops)
	cr := checkReport{
		Workers: o.workers, Resources: o.resources,
		TTLMillis: ms(o.ttl), HoldMillis: ms(o.hold), PauseMillis: ms(o.pause), ElapsedMs: ms(res.Elapsed),
		Acquisitions: rep.Acquisitions, Unknown: rep.Unknown, Failed: stats.failed.Load(),
		Violations: rep.Violations, MaxHolders: rep.MaxHolders, MaxOverlapMs: ms(rep.MaxOverlap),
		LostUpdates: rep.LostUpdates, FencedWrites: rep.FencedWrites, StaleWrites: rep.StaleAccepted,
		Writes: res.Writes, Skipped: res.Skipped,
		Acquire:  percentile{P50: ms(rep.P50), P99: ms(rep.P99)},
		Handoff:  percentile{P50: ms(contention.Percentile(handoffs, 0.5)), P99: ms(contention.Percentile(handoffs, 0.99))},
		Handoffs: len(handoffs),
		Problem:  rep.Unsafe(),
	}
	for _, s := range first.specs {
		cr.Stores = append(cr.Stores, s.name)
	}
	cr.OK = cr.Problem == "" && cr.Acquisitions > 0
	if cr.Acquisitions == 0 && cr.Problem == "" {
		cr.Problem = "no lock was acquired"
		if e := stats.firstErr(); e != nil {
			cr.Problem += ": " + e.Error()
		}
	}

	if o.json {
		if err := printJSON(a.stdout, cr); err != nil {
			return err
		}
	} else if err := cr.print(a, o); err != nil {
		return err
	}
	switch {
	case cr.Acquisitions == 0 && rep.Unsafe() == "":
		return exitWith(exitFailure, nil)
	case !cr.OK:
		return exitWith(exitUnsafe, nil)
	}
	return nil
}

// probeTTL checks that the stores are reachable and take locks of ttl,
// with one lock on resource taken and released: the library refuses a
// TTL the stores cannot honour before anything is sent, and the error
// then names --ttl once, instead of once per worker. It returns the
// validity of that lock, from the call's start (0 if the stores failed).
func probeTTL(ctx context.Context, set *storeSet, resource string, ttl time.Duration) (validity time.Duration, err error) {
	l, err := set.locker(nil)
	if err != nil {
		return 0, &usageError{err: err}
	}
	if _, err := l.IsLocked(ctx, resource); err != nil {
		return 0, err
	}
	start := time.Now()
	held, err := l.TryLock(ctx, resource, ttl)
	switch {
	case errors.Is(err, lock.ErrInvalid):
		return 0, usagef("--ttl %v: %w", ttl, err)
	case err != nil:
		return 0, nil // the run itself reports the stores' failures
	}
	return held.ValidUntil.Sub(start), l.Unlock(ctx, held)
}

// print prints the report as text, and returns the first write error.
func (cr *checkReport) print(a *app, o *checkOptions) error {
	w := &errWriter{w: a.stdout}
	fmt.Fprintf(w, "lockctl check: %s, %s, %v, ttl %v, hold %v, pause %v\n", count(o.workers, "worker"), count(o.resources, "resource"), o.duration, o.ttl, o.hold, o.pause)
	fmt.Fprintf(w, "stores: %s\n\n", strings.Join(cr.Stores, " "))
	el := time.Duration(cr.ElapsedMs * float64(time.Millisecond))
	fmt.Fprintf(w, "acquisitions      %-9d %s\n", cr.Acquisitions, rate(int64(cr.Acquisitions), el))
	fmt.Fprintf(w, "unknown outcomes  %-9d timeouts or store errors: may or may not have taken effect\n", cr.Unknown)
	fmt.Fprintf(w, "violations        %-9d two holders of one resource at once\n", cr.Violations)
	fmt.Fprintf(w, "lost updates      %-9d counter updates lost to interleaving\n", cr.LostUpdates)
	if cr.Skipped > 0 {
		fmt.Fprintf(w, "skipped writes    %-9d of %d, not made: the lock's validity ran out within --hold\n", cr.Skipped, cr.Writes+cr.Skipped)
	}
	if cr.FencedWrites > 0 {
		fmt.Fprintf(w, "stale fences      %-9d of %d fenced writes, accepted though a newer lock had written\n", cr.StaleWrites, cr.FencedWrites)
	}
	if cr.Acquisitions > 0 {
		fmt.Fprintf(w, "acquire latency   p50 %-8s p99 %-8s from Lock call to lock, waiting included\n",
			fmtDur(msDur(cr.Acquire.P50)), fmtDur(msDur(cr.Acquire.P99)))
	}
	if cr.Handoffs > 0 {
		fmt.Fprintf(w, "handoff           p50 %-8s p99 %-8s from a release to the next holder's lock\n",
			fmtDur(msDur(cr.Handoff.P50)), fmtDur(msDur(cr.Handoff.P99)))
	}
	fmt.Fprintln(w)
	switch {
	case cr.OK && cr.Writes == 0:
		fmt.Fprintf(w, "PASS: no violation in %d acquisitions, but no write was made to check for lost updates: lower --hold or raise --ttl\n", cr.Acquisitions)
	case cr.OK:
		fmt.Fprintf(w, "PASS: no violation and no lost update in %d acquisitions\n", cr.Acquisitions)
	case cr.Violations > 0:
		fmt.Fprintf(w, "FAIL: %s (up to %d holders at once, longest overlap %s)\n", cr.Problem, cr.MaxHolders, fmtDur(msDur(cr.MaxOverlapMs)))
	default:
		fmt.Fprintf(w, "FAIL: %s\n", cr.Problem)
	}
	return w.err
}

func msDur(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// handoffTimes returns, sorted, how long each resource stayed free while
// someone waited for it: for each acquisition whose Lock call began before
// the previous holder released the resource, the time from that release
// (the Unlock call) to the moment the Lock call returned.
func handoffTimes(ops []contention.Op) []time.Duration {
	released := map[string]time.Duration{} // token -> start of its successful release
	acqs := map[string][]contention.Op{}
	for _, op := range ops {
		switch {
		case op.Kind == contention.KindRelease && op.Outcome == contention.OK:
			released[op.Token] = op.Start
		case op.Kind == contention.KindAcquire && op.Outcome == contention.OK:
			acqs[op.Resource] = append(acqs[op.Resource], op)
		}
	}
	var out []time.Duration
	for _, list := range acqs {
		slices.SortFunc(list, func(a, b contention.Op) int { return cmp.Compare(a.End, b.End) })
		for k := 1; k < len(list); k++ {
			rel, ok := released[list[k-1].Token]
			if next := list[k]; ok && next.Start < rel && next.End >= rel {
				out = append(out, next.End-rel)
			}
		}
	}
	slices.Sort(out)
	return out
}

// counting counts the Lock calls of a worker, for the progress line.
type counting struct {
	lock.Locker
	stats *callStats
}

type callStats struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	first      error
}

func (s *callStats) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

func (c *counting) Lock(ctx context.Context, resource string, ttl time.Duration, opts ...lock.LockOption) (lock.Lock, error) {
	l, err := c.Locker.Lock(ctx, resource, ttl, opts...)
	if err != nil {
		c.stats.failed.Add(1)
		c.stats.mu.Lock()
		if c.stats.first == nil {
			c.stats.first = err
		}
		c.stats.mu.Unlock()
		return l, err
	}
	c.stats.ok.Add(1)
	return l, nil
}

// randomID returns a short random name for the resources of one run.
func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// asFile returns w as a file, or nil.
func asFile(w any) *os.File {
	f, _ := w.(*os.File)
	return f
}
