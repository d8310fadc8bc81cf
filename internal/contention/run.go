package contention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock"
)

// Config describes a workload: Workers clients, each with its own locker,
// looping Lock → protected section → Unlock.
type Config struct {
	// Workers is the number of concurrent clients. Required.
	Workers int

	// NewLocker makes the locker of one client (0 ≤ client < Workers), so
	// that each can be a separate connection or process-like client. The
	// returned func, if not nil, releases the client's resources; Run
	// calls it once the client is done. Required; a nil Locker returned
	// without an error stops the run with an error matching
	// lock.ErrInvalid.
	NewLocker func(client int) (l lock.Locker, close func(), err error)

	// Limit is the number of holders a resource may have at once: a
	// semaphore's limit, for a workload whose lockers are lock.Semaphore
	// values. Default: 1, mutual exclusion. With a limit above 1 the
	// protected sections write neither the lost-update counter nor the
	// fenced resource, which several holders may rightly interleave on.
	Limit int

	// Shared, if set, tells the clients whose lockers take shared locks
	// (the Reader side of a lock.RWLocker) from those whose take exclusive
	// ones (its Writer side): shared claims may overlap one another, never
	// an exclusive one. Shared clients' sections only read.
	Shared func(client int) bool

	// Resources are the resources locked; worker w takes them round-robin,
	// starting at w. Default: one resource, "contention".
	Resources []string

	// TTL is the TTL of every lock. Required.
	TTL time.Duration

	// Retry is passed to every Lock call with lock.WithRetry when not nil;
	// otherwise the locker's own policy applies.
	Retry *lock.Retry

	// LockTimeout bounds each Lock call (retries included). A call it
	// ends is recorded as Unknown. Default: 10 × TTL.
	LockTimeout time.Duration

	// Hold is the time spent in the protected section, split evenly among
	// its writes: each write reads the counter, sleeps Hold/Writes, checks
	// the lock is still valid and only then writes. Required: the
	// lost-update counter needs the sleep.
	Hold time.Duration

	// Writes is the number of protected writes per section. Default: 1.
	Writes int

	// Pause is the wait between an Unlock (or a failed Lock) and the next
	// Lock; after a failed Lock a worker waits at least 1ms.
	Pause time.Duration

	// Duration is the length of the run: no new Lock call starts after it
	// (calls under way finish, bounded by LockTimeout and Hold).
	Duration time.Duration

	// AwaitRecovery, if positive, makes a run with Duration go on past
	// it, for at most this long, until a Lock succeeds after the last
	// fault ended: a fault that takes longer to inject than planned (a
	// failover on a loaded machine) still leaves time to see the
	// recovery that the report's Recovered asks for.
	AwaitRecovery time.Duration

	// LocksPerWorker, if positive, ends a worker after that many
	// successful acquisitions. Duration or LocksPerWorker is required.
	LocksPerWorker int

	// ServerTTL, if set, is called right after every successful
	// acquisition: it returns the remaining TTL of the lock's key on every
	// server that holds it under the lock's token. It must not
	// underestimate them (round up). Each call is recorded as a
	// KindServerTTL operation for [CheckValidity].
	ServerTTL func(ctx context.Context, l lock.Lock) ([]time.Duration, error)

	// Quorum is the number of servers that must hold a lock, for
	// ServerTTL: 1 for a single store, a majority for Redlock. Default: 1.
	Quorum int

	// BeforeWrite, if set, is called after a write's validity check and
	// before the write: a scenario stalls a holder there (as a GC pause
	// would) to make the writes that only fencing can refuse. The
	// lost-update counter takes such writes unfenced, so a scenario that
	// stalls holders past their validity expects lost updates even on a
	// correct store.
	BeforeWrite func(ctx context.Context, client int, l lock.Lock)

	// Faults are injected while the workload runs.
	Faults []Fault

	// Recorder records the run. Default: a new one, started by Run.
	Recorder *Recorder
}

// Fault is a fault injected at a given moment of a run.
type Fault struct {
	// Name names the fault in its window and in errors.
	Name string
	// At is when Inject runs, from the start of the run.
	At time.Duration
	// For is how long after Inject began Heal runs.
	For time.Duration
	// Inject injects the fault. Required.
	Inject func() error
	// Heal undoes it. It runs at At+For, or when the run ends if that
	// comes first (a For too long to add to At means the end of the
	// run), so no fault outlives the run. Without Heal the fault is
	// a single event (expire a key, reset connections) whose window is
	// the time Inject took.
	Heal func() error
}

// Result is what a run leaves to the checkers.
type Result struct {
	// Recorder holds every operation and fault window of the run.
	Recorder *Recorder
	// Counters and Fences are the lost-update counter and the fenced
	// resource of each resource.
	Counters map[string]*Counter
	Fences   map[string]*FencedResource
	// Writes counts the protected writes made; Skipped those not made
	// because the lock's validity had run out by the time of the write
	// (readers, and holders of a lock with Limit above 1, make none and
	// skip none).
	Writes, Skipped int
	// Elapsed is the length of the run.
	Elapsed time.Duration
	// Limit is the workload's Config.Limit, for the overlap checker.
	Limit int
}

// Run runs the workload described by cfg, injecting its faults, until
// cfg.Duration has passed, every worker has made cfg.LocksPerWorker
// acquisitions, or ctx ends. Every goroutine it starts has ended when it
// returns, and every client's close func has been called.
//
// It returns an error for an invalid Config, a locker that reports bad
// input, a fault whose Inject or Heal fails, and a fault the run ended
// before injecting (a scenario that injected nothing proves nothing). The
// Result is returned with the error when the run took place.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	res := &Result{Recorder: cfg.Recorder, Counters: map[string]*Counter{}, Fences: map[string]*FencedResource{}, Limit: cfg.Limit}
	for _, r := range cfg.Resources {
		res.Counters[r], res.Fences[r] = &Counter{}, &FencedResource{}
	}
	lockers := make([]lock.Locker, cfg.Workers)
	closers := make([]func(), 0, cfg.Workers)
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range lockers {
		l, closeFn, err := cfg.NewLocker(i)
		if err != nil {
			return nil, fmt.Errorf("contention: NewLocker(%d): %w", i, err)
		}
		if l == nil {
			if closeFn != nil {
				closeFn()
			}
			return nil, fmt.Errorf("contention: %w: NewLocker(%d) returned a nil Locker", lock.ErrInvalid, i)
		}
		if closeFn != nil {
			closers = append(closers, closeFn)
		}
		if cfg.shared(i) {
			lockers[i] = cfg.Recorder.SharedLocker(i, l)
		} else {
			lockers[i] = cfg.Recorder.Locker(i, l)
		}
	}

	r := &runner{cfg: cfg, res: res, stop: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var workers sync.WaitGroup
	for i, l := range lockers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if err := r.work(ctx, i, l); err != nil {
				r.fail(err)
				cancel()
			}
		}()
	}
	workersDone := make(chan struct{})
	conducted := make(chan struct{})
	go func() {
		defer close(conducted)
		r.conduct(ctx, start, workersDone)
	}()
	workers.Wait()
	close(workersDone)
	<-conducted
	res.Elapsed = time.Since(start)
	res.Writes, res.Skipped = int(r.writes.Load()), int(r.skipped.Load())
	return res, errors.Join(r.errs...)
}

func (c *Config) setDefaults() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("contention: %w: Config.%s", lock.ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Workers <= 0:
		return bad("Workers is %d: want > 0", c.Workers)
	case c.NewLocker == nil:
		return bad("NewLocker is nil")
	case c.TTL <= 0:
		return bad("TTL is %v: want > 0", c.TTL)
	case c.Hold <= 0:
		return bad("Hold is %v: want > 0", c.Hold)
	case c.Writes < 0:
		return bad("Writes is %d: want >= 0", c.Writes)
	case c.Pause < 0:
		return bad("Pause is %v: want >= 0", c.Pause)
	case c.LockTimeout < 0:
		return bad("LockTimeout is %v: want >= 0", c.LockTimeout)
	case c.AwaitRecovery < 0:
		return bad("AwaitRecovery is %v: want >= 0", c.AwaitRecovery)
	case c.Duration < 0 || c.LocksPerWorker < 0:
		return bad("Duration (%v) and LocksPerWorker (%d) must not be negative", c.Duration, c.LocksPerWorker)
	case c.Duration == 0 && c.LocksPerWorker == 0:
		return bad("Duration and LocksPerWorker are both 0: the run would not end")
	case c.Quorum < 0:
		return bad("Quorum is %d: want >= 0", c.Quorum)
	case c.Limit < 0:
		return bad("Limit is %d: want >= 0", c.Limit)
	}
	for i, f := range c.Faults {
		switch {
		case f.Inject == nil:
			return bad("Faults[%d] (%q): Inject is nil", i, f.Name)
		case f.At < 0 || f.For < 0:
			return bad("Faults[%d] (%q): At (%v) and For (%v) must not be negative", i, f.Name, f.At, f.For)
		}
	}
	for i, r := range c.Resources {
		if r == "" {
			return bad("Resources[%d] is empty", i)
		}
	}
	if len(c.Resources) == 0 {
		c.Resources = []string{"contention"}
	}
	if c.Writes == 0 {
		c.Writes = 1
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = 10 * c.TTL
	}
	if c.Quorum == 0 {
		c.Quorum = 1
	}
	if c.Limit == 0 {
		c.Limit = 1
	}
	if c.Recorder == nil {
		c.Recorder = NewRecorder()
	}
	return nil
}

// shared reports whether client takes shared locks.
func (c *Config) shared(client int) bool { return c.Shared != nil && c.Shared(client) }

// writes reports whether client's sections write: only holders that must
// be alone do.
func (c *Config) writes(client int) bool { return c.Limit <= 1 && !c.shared(client) }

// runner is the state shared by the goroutines of one run.
type runner struct {
	cfg      Config
	res      *Result
	stop     chan struct{} // closed when no new Lock call may start
	stopOnce sync.Once

	writes, skipped atomic.Int64

	mu   sync.Mutex
	errs []error
}

func (r *runner) halt() { r.stopOnce.Do(func() { close(r.stop) }) }

func (r *runner) fail(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

// work is the loop of one client.
func (r *runner) work(ctx context.Context, client int, l lock.Locker) error {
	cfg := r.cfg
	var opts []lock.LockOption
	if cfg.Retry != nil {
		opts = append(opts, lock.WithRetry(*cfg.Retry))
	}
	locks := 0
	for n := 0; ; n++ {
		select {
		case <-r.stop:
			return nil
		case <-ctx.Done():
			return nil
		default:
		}
		resource := cfg.Resources[(client+n)%len(cfg.Resources)]
		lctx, cancel := context.WithTimeout(ctx, cfg.LockTimeout)
		held, err := l.Lock(lctx, resource, cfg.TTL, opts...)
		cancel()
		if err != nil {
			if errors.Is(err, lock.ErrInvalid) {
				return fmt.Errorf("contention: client %d: %w", client, err)
			}
			if !r.sleep(ctx, max(cfg.Pause, time.Millisecond)) {
				return nil
			}
			continue
		}
		locks++
		r.section(ctx, client, resource, held)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.TTL)
		_ = l.Unlock(uctx, held) // recorded; a failed release is the store's problem to expire
		cancel()
		if cfg.LocksPerWorker > 0 && locks >= cfg.LocksPerWorker {
			return nil
		}
		if !r.sleep(ctx, cfg.Pause) {
			return nil
		}
	}
}

// section is the protected section of a held lock on resource. The
// counter and the fenced resource are those of the resource asked for,
// whatever name the lock carries.
func (r *runner) section(ctx context.Context, client int, resource string, l lock.Lock) {
	cfg, rec := r.cfg, r.cfg.Recorder
	if cfg.ServerTTL != nil {
		op := Op{Client: client, Kind: KindServerTTL, Resource: l.Resource, Token: l.Token, Fence: l.Fence,
			ValidUntil: rec.Offset(l.ValidUntil), Start: rec.Now()}
		ttls, err := cfg.ServerTTL(ctx, l)
		op.End, op.Outcome, op.Err = rec.Now(), Classify(err), err
		if err == nil {
			op.ServerExpiry = op.End + QuorumTTL(ttls, cfg.Quorum)
		}
		rec.Add(op)
	}
	counter, fenced := r.res.Counters[resource], r.res.Fences[resource]
	each := cfg.Hold / time.Duration(cfg.Writes)
	for i := range cfg.Writes {
		v := counter.Read()
		if !Sleep(ctx, each) {
			return // the run was canceled: abandon the write
		}
		if !l.Valid() {
			if cfg.writes(client) {
				r.skipped.Add(int64(cfg.Writes - i))
			}
			return
		}
		if !cfg.writes(client) {
			continue // a reader, or one of several holders: nothing to write
		}
		if cfg.BeforeWrite != nil {
			cfg.BeforeWrite(ctx, client, l)
		}
		counter.Write(v + 1)
		r.writes.Add(1)
		if l.Fence != 0 {
			fenced.Write(client, l.Token, l.Fence, rec.Now())
		}
	}
}

// sleep waits d, and reports false if the run stopped or ctx ended first.
func (r *runner) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// Sleep waits d and reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// event is a step of the run's timeline.
type event struct {
	at    time.Duration
	fault int  // index in Config.Faults; -1 for the end of the run
	heal  bool // heal rather than inject
}

// conduct injects and heals the faults on time and stops the run at
// cfg.Duration. When the run ends early (ctx, or every worker done), it
// heals what it injected and reports the faults it could not inject.
func (r *runner) conduct(ctx context.Context, start time.Time, workersDone <-chan struct{}) {
	cfg := r.cfg
	var events []event
	for i, f := range cfg.Faults {
		events = append(events, event{at: f.At, fault: i})
		if f.Heal != nil {
			heal := f.At + f.For
			if heal < f.At { // For as long as a Duration can be: until the end of the run
				heal = math.MaxInt64
			}
			events = append(events, event{at: heal, fault: i, heal: true})
		}
	}
	if cfg.Duration > 0 {
		events = append(events, event{at: cfg.Duration, fault: -1})
	}
	// In time order; at equal times injections before heals before the end.
	slices.SortStableFunc(events, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(rank(a), rank(b)))
	})
	injected := make([]bool, len(cfg.Faults))
	healed := make([]func(), len(cfg.Faults))
	defer r.halt()
	for k, e := range events {
		if !r.waitUntil(ctx, start.Add(e.at), workersDone) {
			for _, e := range events[k:] {
				if e.fault >= 0 && !e.heal && !injected[e.fault] {
					r.fail(fmt.Errorf("contention: fault %q (at %v) not injected: the run ended at %v", cfg.Faults[e.fault].Name, e.at, time.Since(start).Round(time.Millisecond)))
				}
			}
			r.halt()
			for i, f := range cfg.Faults {
				if injected[i] && healed[i] != nil {
					r.heal(f, healed[i])
				}
			}
			return
		}
		switch {
		case e.fault < 0:
			r.awaitRecovery(ctx, workersDone)
			r.halt()
		case e.heal:
			if healed[e.fault] != nil {
				r.heal(cfg.Faults[e.fault], healed[e.fault])
				healed[e.fault] = nil
			}
		default:
			f := cfg.Faults[e.fault]
			done := cfg.Recorder.Fault(f.Name)
			injected[e.fault] = true
			if err := f.Inject(); err != nil {
				r.fail(fmt.Errorf("contention: injecting fault %q: %w", f.Name, err))
			}
			if f.Heal == nil {
				done()
			} else {
				healed[e.fault] = done
			}
		}
	}
	// Every event passed (the run ends with the workers when it has no
	// Duration).
	<-workersDone
}

// awaitRecovery waits, for at most cfg.AwaitRecovery, until a Lock has
// succeeded after the last fault that ended, if any did.
func (r *runner) awaitRecovery(ctx context.Context, workersDone <-chan struct{}) {
	rec := r.cfg.Recorder
	last, ended := time.Duration(0), false
	for _, w := range rec.Windows() {
		if w.End >= 0 {
			last, ended = max(last, w.End), true
		}
	}
	if r.cfg.AwaitRecovery <= 0 || !ended {
		return
	}
	const every = 10 * time.Millisecond
	for deadline := time.Now().Add(r.cfg.AwaitRecovery); time.Now().Before(deadline); {
		if _, found := Recovery(rec.Ops(), last); found {
			return
		}
		if !r.waitUntil(ctx, time.Now().Add(every), workersDone) {
			return
		}
	}
}

func rank(e event) int {
	switch {
	case e.fault < 0:
		return 2
	case e.heal:
		return 1
	}
	return 0
}

func (r *runner) heal(f Fault, done func()) {
	if err := f.Heal(); err != nil {
		r.fail(fmt.Errorf("contention: healing fault %q: %w", f.Name, err))
	}
	done()
}

// waitUntil waits until t and reports whether the run is still going.
func (r *runner) waitUntil(ctx context.Context, t time.Time, workersDone <-chan struct{}) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
	case <-r.stop:
	case <-workersDone:
	}
	return false
}
