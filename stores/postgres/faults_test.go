package postgres_test

// The fault tier of the Postgres store: workloads of the contention
// runner against a real server while it is killed and restarted on its
// data, while its connections are reset and its replies lost (through the
// fault proxy), and while holders stall past their TTL with a fenced
// resource. Each scenario has a positive control: a deliberately broken
// setup that the same checks must catch. The scenarios live here, not in
// internal/testing/faultsuite, because the store is a module of its own.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// faultScenario is one scenario's fixtures and checks.
type faultScenario struct {
	t       *testing.T
	ctx     context.Context
	name    string
	base    faultkit.GoroutineSet
	url     string // of the server, or of the proxy in front of it
	table   postgres.Option
	observe *pgxpool.Pool // direct to the server, for the checks
	// connectTimeout bounds the clients' connection attempts.
	connectTimeout time.Duration
	closers        []func()
}

func beginFault(t *testing.T, name string, srv *pgtest.Server) *faultScenario {
	t.Helper()
	if testing.Short() {
		t.Skip("fault scenarios skipped in -short mode")
	}
	f := &faultScenario{t: t, name: name, base: faultkit.Goroutines(), url: srv.URL(""), table: freshTable(), connectTimeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	f.ctx = ctx
	f.closers = append(f.closers, cancel)
	f.observe = f.pool(srv.URL(""))
	s, err := postgres.New(f.observe, f.table)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

// pool opens a pool closed with the scenario.
func (f *faultScenario) pool(url string) *pgxpool.Pool {
	f.t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		f.t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = f.connectTimeout
	cfg.MaxConns = 4
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.closers = append(f.closers, p.Close)
	return p
}

// proxy puts a fault proxy, closed with the scenario, in front of srv,
// and returns it and the URL of srv's database through it.
func (f *faultScenario) proxy(srv *pgtest.Server) (*faultproxy.Proxy, string) {
	f.t.Helper()
	p, err := faultproxy.New(srv.Addr())
	if err != nil {
		f.t.Fatal(err)
	}
	f.closers = append(f.closers, func() { _ = p.Close() })
	return p, strings.Replace(srv.URL(""), srv.Addr(), p.Addr(), 1)
}

// config is a workload whose clients each have a pool of their own (as
// processes would) and a store made by wrap (nil: the store itself).
func (f *faultScenario) config(workers int, ttl, hold, duration time.Duration, wrap func(*postgres.Store) lock.Store) contention.Config {
	stores := make([]lock.Store, workers)
	for i := range stores {
		s, err := postgres.New(f.pool(f.url), f.table, postgres.WithSweepInterval(0))
		if err != nil {
			f.t.Fatal(err)
		}
		stores[i] = s
		if wrap != nil {
			stores[i] = wrap(s)
		}
	}
	return contention.Config{
		Workers: workers, TTL: ttl, Hold: hold, Duration: duration,
		NewLocker: func(i int) (lock.Locker, func(), error) {
			l, err := lock.NewSingle(stores[i], nil)
			return l, nil, err
		},
		ServerTTL: f.serverTTL,
	}
}

// serverTTL reads a lock's remaining TTL on the server, if it is held
// under its token, rounded up.
func (f *faultScenario) serverTTL(ctx context.Context, l lock.Lock) ([]time.Duration, error) {
	s, _ := postgres.New(f.observe, f.table)
	var us int64
	err := f.observe.QueryRow(ctx, "SELECT ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint FROM "+s.Table()+
		" WHERE resource = $1 AND token = $2 AND expires_at > clock_timestamp()", []byte(l.Resource), []byte(l.Token)).Scan(&us)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return []time.Duration{time.Duration(us+1) * time.Microsecond}, nil
}

// locked counts the locks still held on the server.
func (f *faultScenario) locked(ctx context.Context) (int, error) {
	s, _ := postgres.New(f.observe, f.table)
	var n int
	err := f.observe.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()+" WHERE expires_at > clock_timestamp()").Scan(&n)
	return n, err
}

func (f *faultScenario) run(cfg contention.Config) (contention.Report, *contention.Result) {
	f.t.Helper()
	res, err := contention.Run(f.ctx, cfg)
	if err != nil {
		f.t.Fatalf("%s: %v", f.name, err)
	}
	for _, v := range contention.CheckHolders(contention.Claims(res.Recorder.Ops()), res.Limit).Examples {
		f.t.Logf("overlap of %v: %+v and %+v", v.Overlap, v.A, v.B)
	}
	return res.Report(f.name, "postgres"), res
}

// finish measures what is left locked a TTL on, closes the fixtures,
// checks for leaked goroutines and emits the report line.
func (f *faultScenario) finish(rep contention.Report, ttl time.Duration) contention.Report {
	f.t.Helper()
	n, err := faultkit.Residue(f.ctx, ttl+2*time.Second, f.locked)
	if err != nil {
		f.t.Errorf("%s: counting locks left: %v", f.name, err)
	}
	rep.Residue = n
	for i := len(f.closers) - 1; i >= 0; i-- {
		f.closers[i]()
	}
	// The server's process reaper and output copiers are the fixture's.
	leaked := f.base.Leaked(10*time.Second, "testserver.", "os/exec.")
	rep.LeakedGoroutines = len(leaked)
	for i, g := range leaked {
		if i < 3 {
			f.t.Logf("leaked goroutine:\n%s", g)
		}
	}
	faultkit.Emit(f.t, rep)
	if rep.Residue > 0 || rep.LeakedGoroutines > 0 {
		f.t.Errorf("%s: %d locks left beyond their TTL, %d leaked goroutines; want 0", f.name, rep.Residue, rep.LeakedGoroutines)
	}
	return rep
}

// PostgreSQL is killed (SIGKILL) while clients hold and contend for a
// lock, and restarted at once on the same data: the locks granted before
// the kill are still there after crash recovery, so nobody else takes
// them while their holders work, and fences keep increasing across the
// restart. The positive control keeps the locks in an UNLOGGED table,
// which crash recovery empties: the holders' locks are forgotten, and the
// next clients take them while the holders still work.
func TestFaultKilledAndRestarted(t *testing.T) {
	for _, control := range []bool{false, true} {
		name := "postgres-killed-restarted"
		if control {
			name = "control-unlogged-table-killed"
		}
		t.Run(name, func(t *testing.T) {
			srv := pgtest.Start(t)
			f := beginFault(t, name, srv)
			if control {
				s, _ := postgres.New(f.observe, f.table)
				if _, err := f.observe.Exec(f.ctx, "ALTER TABLE "+s.Table()+" SET UNLOGGED"); err != nil {
					t.Fatal(err)
				}
			}
			// The server is killed once a holder is in its section, and
			// the holder stalls there until a while after the restart,
			// however long that takes: the other clients then try for
			// the lock while it holds it.
			const ttl = 5 * time.Second
			cfg := f.config(3, ttl, 400*time.Millisecond, 3*time.Second, nil)
			cfg.Writes = 2
			cfg.LockTimeout = 2 * ttl
			var killedAt, healedAt time.Duration
			var holdingOnce sync.Once
			holding, resumed := make(chan struct{}), make(chan struct{})
			cfg.BeforeWrite = func(ctx context.Context, _ int, _ lock.Lock) {
				holdingOnce.Do(func() { close(holding) })
				select {
				case <-resumed:
				case <-ctx.Done():
				}
			}
			cfg.Recorder = contention.NewRecorder()
			cfg.Faults = []contention.Fault{{
				Name: "kill -9 and restart", For: 100 * time.Millisecond,
				Inject: func() error {
					select {
					case <-holding:
					case <-f.ctx.Done():
						return f.ctx.Err()
					}
					killedAt = cfg.Recorder.Now()
					srv.Kill()
					return nil
				},
				Heal: func() error {
					err := srv.Restart()
					healedAt = cfg.Recorder.Now()
					time.AfterFunc(500*time.Millisecond, func() { close(resumed) })
					return err
				},
			}}
			rep, res := f.run(cfg)
			var before, after uint64 // the highest fence granted before the kill, the lowest after the restart
			for _, op := range res.Recorder.Ops() {
				if op.Kind != contention.KindAcquire || op.Outcome != contention.OK {
					continue
				}
				switch {
				case op.End < killedAt:
					before = max(before, op.Fence)
				case op.End > healedAt && (after == 0 || op.Fence < after):
					after = op.Fence // granted once the server was back
				}
			}
			rep.Add("fence_before_kill", itoa(before))
			rep.Add("fence_after_restart", itoa(after))
			rep.AddMillis("restart_ms", healedAt-killedAt)
			rep = f.finish(rep, ttl)
			if control {
				if rep.Violations == 0 {
					t.Errorf("%s: no violation with the locks in an UNLOGGED table: the checker is blind to locks lost in a crash: %s", name, rep.Line())
				}
				return
			}
			if bad := rep.Unsafe(); bad != "" {
				t.Errorf("%s: %s", name, bad)
			}
			if before == 0 || after == 0 || after <= before {
				t.Errorf("fences: highest %d before the kill, lowest %d after the restart; want both, increasing: %s", before, after, rep.Line())
			}
		})
	}
}

// misclassifying is the classic bug the store must not have: a store
// error taken for an answer — Acquire's for "held by another", Release's
// for "not held".
// misclassifying takes the store's errors for answers: a failed Acquire
// for "held by another", a failed Release for "not held". With within
// set, it also gives up on a reply after that long, so that its wrong
// answers come before the caller's own deadline, which the locker would
// report instead.
type misclassifying struct {
	*postgres.Store
	within time.Duration
}

// call runs f with the context that misclassifying gives the store.
func (m misclassifying) call(ctx context.Context, f func(ctx context.Context) error) error {
	if m.within > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.within)
		defer cancel()
	}
	return f(ctx)
}

func (m misclassifying) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := m.call(ctx, func(ctx context.Context) error { return m.Store.Acquire(ctx, resource, token, ttl) }); err != nil {
		return lock.ErrNotAcquired
	}
	return nil
}

func (m misclassifying) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	var f uint64
	err := m.call(ctx, func(ctx context.Context) (err error) {
		f, err = m.Store.AcquireFenced(ctx, resource, token, ttl)
		return err
	})
	if err != nil {
		return 0, lock.ErrNotAcquired
	}
	return f, nil
}

func (m misclassifying) Release(ctx context.Context, resource, token string) error {
	if err := m.call(ctx, func(ctx context.Context) error { return m.Store.Release(ctx, resource, token) }); err != nil {
		return lock.ErrNotHeld
	}
	return nil
}

// The clients' connections go through a fault proxy that resets them
// every few hundred milliseconds and, for a while, loses every reply (the
// statements run; the clients never hear, and their connections are reset
// when the loss ends). A call made while replies are lost cannot know its
// outcome: it must end Unknown, never "held by another" or "not held" —
// and what it may have locked must not outlive its TTL. The positive
// control turns store errors into those answers.
func TestFaultConnectionResets(t *testing.T) {
	for _, control := range []bool{false, true} {
		name := "postgres-connection-resets"
		if control {
			name = "control-errors-taken-for-answers"
		}
		t.Run(name, func(t *testing.T) {
			srv := pgtest.Shared(t)
			f := beginFault(t, name, srv)
			proxy, url := f.proxy(srv)
			f.url = url
			var wrap func(*postgres.Store) lock.Store
			if control {
				// Its answers come within 100ms, well inside the calls'
				// 300ms: a call that outlives its deadline is reported by
				// the locker as the deadline, whatever the store says.
				wrap = func(s *postgres.Store) lock.Store { return misclassifying{s, 100 * time.Millisecond} }
			}
			const ttl = time.Second
			f.connectTimeout = 300 * time.Millisecond // new connections fail while replies are lost
			cfg := f.config(4, ttl, 20*time.Millisecond, 3*time.Second, wrap)
			cfg.Resources = []string{"a", "b"}
			cfg.Retry = &lock.NoRetry // one attempt per call: its outcome is that attempt's
			// A call whose reply is lost waits for it on its connection
			// until the loss ends; bounding every call well inside the loss
			// makes sure calls end while replies are lost, whatever the
			// workers were doing when it began.
			cfg.LockTimeout = 300 * time.Millisecond
			cfg.Recorder = contention.NewRecorder()
			for _, at := range []time.Duration{200, 500, 800, 2300, 2500} {
				cfg.Faults = append(cfg.Faults, contention.Fault{
					Name: "reset", At: at * time.Millisecond,
					Inject: func() error { proxy.Reset(); return nil },
				})
			}
			var lossStart, lossEnd time.Duration
			cfg.Faults = append(cfg.Faults, contention.Fault{
				Name: "replies lost", At: 1000 * time.Millisecond, For: 1200 * time.Millisecond,
				Inject: func() error {
					proxy.Set(faultproxy.ToClient, faultproxy.Drop())
					lossStart = cfg.Recorder.Now()
					return nil
				},
				Heal: func() error { lossEnd = cfg.Recorder.Now(); proxy.Heal(); return nil },
			})
			rep, res := f.run(cfg)
			// No reply reaches a client while replies are lost: a call
			// that ended then (well after the loss began: a reply that
			// arrived just before takes a moment to be recorded) heard no
			// answer. Those are the calls that timed out.
			misclassified, blind := 0, 0
			for _, op := range res.Recorder.Ops() {
				if op.End < lossStart+100*time.Millisecond || op.End >= lossEnd {
					continue
				}
				if op.Kind != contention.KindAcquire && op.Kind != contention.KindRelease {
					continue
				}
				blind++
				if op.Outcome == contention.Refused || op.Outcome == contention.NotHeld {
					misclassified++
					if misclassified <= 3 {
						t.Logf("answered while replies were lost: %+v", op)
					}
				}
			}
			rep.Add("calls_while_replies_lost", itoa(uint64(blind)))
			rep.Add("misclassified", itoa(uint64(misclassified)))
			rep = f.finish(rep, ttl)
			if control {
				if misclassified == 0 {
					t.Errorf("%s: no call answered while replies were lost, with errors taken for answers: the check is blind: %s", name, rep.Line())
				}
				return
			}
			if bad := rep.Unsafe(); bad != "" {
				t.Errorf("%s: %s", name, bad)
			}
			if blind == 0 || rep.Unknown == 0 || misclassified > 0 {
				t.Errorf("want calls while replies were lost, all of unknown outcome: %d calls, %d answered as refused or not held; %s", blind, misclassified, rep.Line())
			}
		})
	}
}

// repeating hands out the same fence every time: the fence of a stale
// holder then looks as new as its successor's.
type repeating struct{ *postgres.Store }

func (r repeating) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	if _, err := r.Store.AcquireFenced(ctx, resource, token, ttl); err != nil {
		return 0, err
	}
	return 1, nil
}

// A holder stalls (a GC pause, a stopped process) right after checking
// that its lock is valid, for longer than the TTL, and then writes;
// another client has taken the lock and written under a newer fence
// meanwhile. The fenced resource refuses the stale writes; the unfenced
// counter, which takes the same writes, shows the updates they would have
// lost. The positive control hands out a repeating fence.
func TestFaultPausedHolderFenced(t *testing.T) {
	for _, control := range []bool{false, true} {
		name := "paused-holder-fenced"
		if control {
			name = "control-repeating-fence"
		}
		t.Run(name, func(t *testing.T) {
			f := beginFault(t, name, pgtest.Shared(t))
			var wrap func(*postgres.Store) lock.Store
			if control {
				wrap = func(s *postgres.Store) lock.Store { return repeating{s} }
			}
			const ttl = 300 * time.Millisecond
			cfg := f.config(2, ttl, 10*time.Millisecond, 2*time.Second, wrap)
			cfg.Writes = 2
			cfg.Pause = 5 * time.Millisecond
			var stalls atomic.Int32
			cfg.BeforeWrite = func(ctx context.Context, _ int, _ lock.Lock) {
				if stalls.Add(1)%10 == 1 { // every tenth write stalls past the TTL
					select {
					case <-time.After(3 * ttl):
					case <-ctx.Done():
					}
				}
			}
			rep, _ := f.run(cfg)
			rep = f.finish(rep, ttl)
			if rep.LostUpdates == 0 {
				t.Errorf("%s: the stalled writes lost no update on the unfenced counter: they did not write after their lock expired: %s", name, rep.Line())
			}
			if control {
				if rep.StaleAccepted == 0 {
					t.Errorf("%s: no stale write accepted with a repeating fence: the check is blind: %s", name, rep.Line())
				}
				return
			}
			if rep.StaleAccepted > 0 || rep.FencedRejected == 0 || rep.Violations > 0 || rep.ValidityViolations > 0 {
				t.Errorf("%s: want the stalled holders' writes refused by the fence, and nothing else unsafe: %s", name, rep.Line())
			}
		})
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
