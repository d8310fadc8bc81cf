package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockkit/lock"
)

var runCommand = &command{
	name:    "run",
	summary: "run a command while holding a lock: flock(1) across machines",
	usage:   "run [flags] RESOURCE [--] COMMAND [ARGS...]",
	doc: `Acquires the lock on RESOURCE, runs COMMAND, keeps the lock extended while
it runs, releases it when the command exits, and exits with the command's
status. Flags go before RESOURCE; everything after it is the command.

If the lock is held by another owner, run fails at once with status 75
(--conflict-exit-code) and says so on stderr, or waits for it (--wait).

With -n N, run takes one of N permits on RESOURCE instead of its lock, so up
to N commands run at once (a semaphore, like consul lock -n); every run on
RESOURCE must give the same N, and another N is refused with status 2.
With --shared or --exclusive it takes one side of a read-write lock (like
flock -s and -x): many --shared holders at once, or one --exclusive one; an
--exclusive run that waits keeps new --shared ones out. Permits, the
read-write lock and the plain lock of one RESOURCE are separate things that
do not exclude each other: give every run on RESOURCE the same flags.
With --fence-env the command gets the lock's fence, a number that grows with
every acquisition, to pass to systems that can refuse stale writers.

Signals (INT, TERM, HUP, QUIT, USR1, USR2) sent to lockctl are passed on to
the command. If the lock is lost while the command runs (a store lost it,
an operator ran release --force, extensions failed until the lock ran out),
the command gets SIGTERM, then SIGKILL after --kill-after, and lockctl exits
with status 76: by then another owner may hold the lock. If the release
fails, or a store of a Redlock does not confirm it, run names the store in
a warning on stderr (the lock frees there when its TTL runs out) and exits
with the command's status all the same.

Run from an interactive prompt, the command stays in lockctl's process
group, so it can read the terminal and gets Ctrl-C, Ctrl-\ and a hangup
from it directly: lockctl does not pass INT, QUIT or HUP on then, whoever
sends them (signal the command itself). Otherwise (cron, CI, systemd) it
gets a process group of its own, and signals and the kill after a loss
reach every process it started (a stopped group is continued after each
signal). On Linux the command is killed if lockctl itself dies, and so is
its group when it has one.`,
	examples: `  # Run a nightly job on one machine only; the others exit with 75.
  lockctl run --store redis://redis.internal:6379 nightly-report -- ./report.sh

  # Wait up to 5 minutes for a deploy slot; pass the fence to the script.
  lockctl run --wait 5m --fence-env DEPLOY_FENCE deploy/prod -- ./deploy.sh

  # Redlock over three independent Redis servers, stores from the environment.
  export LOCKCTL_STORES="redis://:secret@r1:6379 redis://:secret@r2:6379 redis://:secret@r3:6379"
  lockctl run --ttl 1m migrate-db -- ./migrate up

  # At most 4 builds at once across the fleet.
  lockctl run -n 4 --wait forever builds -- make -j8

  # Reports share the dataset; the nightly refresh has it to itself.
  lockctl run --shared --wait 1m dataset -- ./report.sh
  lockctl run --exclusive --wait 10m dataset -- ./refresh.sh

  # In crontab: skip quietly, and successfully, when another machine runs it.
  */5 * * * * lockctl run --quiet --conflict-exit-code 0 --store memcache://mc:11211 sync -- ./sync.sh`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		o := &runOptions{stores: addStoreFlags(fs), take: addTakeFlags(fs), mode: addModeFlags(fs)}
		fs.DurationVar(&o.ttl, "ttl", 30*time.Second, "lock TTL; extended every TTL/3 while the command runs, so the lock of a crashed lockctl frees within a TTL")
		fs.StringVar(&o.fenceEnv, "fence-env", "", "pass the lock's fence to the command in environment variable `NAME` (every store fences: redis, memcache, etcd, postgres, memory; a Redlock does unless one of its stores is etcd://)")
		fs.DurationVar(&o.killAfter, "kill-after", 10*time.Second, "when the lock is lost, how long after SIGTERM the command gets SIGKILL")
		fs.BoolVar(&o.verbose, "verbose", false, "report on stderr when the lock is acquired and released")
		return func(ctx context.Context, a *app, args []string) error {
			o.fenceEnvGiven = flagGiven(fs, "fence-env")
			return a.run(ctx, o, args)
		}
	},
}

type runOptions struct {
	stores   *storeFlags
	take     *takeFlags
	mode     *modeFlags
	ttl      time.Duration
	fenceEnv string
	// fenceEnvGiven: --fence-env was on the command line, possibly empty
	// (--fence-env "$UNSET"), which must not silently pass no fence.
	fenceEnvGiven bool
	killAfter     time.Duration
	verbose       bool
}

// fenceEnvRefused refuses --fence-env over stores whose locks carry no
// fence.
func fenceEnvRefused(specs []*storeSpec) error {
	why := "a Redlock's locks carry a fence only when every store can raise its fences, and etcd:// stores cannot"
	if len(specs) == 1 {
		why = specs[0].kind + " stores cannot hand out fences"
	}
	return usagef("--fence-env: %s; drop --fence-env, or use stores that fence", why)
}

// openForFence opens the stores of sf for run and elect. With fenced
// (--fence-env), stores whose locks carry no fence are refused: from
// their URLs before connecting, and as connected (a server may not
// fence).
func (a *app) openForFence(ctx context.Context, sf *storeFlags, fenced bool) (*storeSet, error) {
	specs, err := a.storeSpecs(sf, "")
	if err != nil {
		return nil, err
	}
	if fenced && !specsFence(specs) {
		return nil, fenceEnvRefused(specs)
	}
	set, err := openStores(ctx, specs, sf, a.stderr)
	if err != nil {
		return nil, err
	}
	if fenced && !set.fences() {
		set.Close()
		return nil, fenceEnvRefused(specs)
	}
	return set, nil
}

func (a *app) run(ctx context.Context, o *runOptions, args []string) error {
	if len(args) == 0 {
		return usagef("missing RESOURCE and COMMAND")
	}
	resource, argv := args[0], args[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	} else if len(argv) > 0 && strings.HasPrefix(argv[0], "-") {
		return usagef("%q after RESOURCE: flags go before RESOURCE (everything after it is the command)", argv[0])
	}
	if err := checkName("RESOURCE", resource); err != nil {
		return err
	}
	switch {
	case len(argv) == 0:
		return usagef("missing COMMAND after RESOURCE %q", resource)
	case o.killAfter < 0:
		return usagef("--kill-after %v: want a duration >= 0", o.killAfter)
	}
	if err := checkFenceEnv(o.fenceEnvGiven, o.fenceEnv); err != nil {
		return err
	}
	if err := o.take.check(o.ttl); err != nil {
		return err
	}
	if err := o.mode.check(); err != nil {
		return err
	}
	set, err := a.openForFence(ctx, o.stores, o.fenceEnv != "")
	if err != nil {
		return err
	}
	defer set.Close()
	if set.inProcess() {
		fmt.Fprintln(a.stderr, "lockctl run: warning: memory:// locks exist only inside this lockctl process: other processes are not kept out")
	}
	hook, watch := &waitHook{}, newReleaseWatch(true)
	set.opts.Holder = runHolder(argv)
	locker, err := set.locker(hookList{hook, watch})
	if err == nil {
		locker, err = o.mode.wrap(locker)
	}
	if err != nil {
		return &usageError{err: err}
	}

	sup := &supervisor{a: a, interactive: inForeground(a.stdin)}
	acqCtx, cancelAcq := context.WithCancelCause(ctx)
	defer cancelAcq(nil)
	sup.cancelAcq = cancelAcq
	stopSignals := sup.catchSignals()
	defer stopSignals()
	if o.verbose && (o.take.wait.forever || o.take.wait.d > 0) {
		hook.onWait = func() {
			fmt.Fprintf(a.stderr, "lockctl run: %q is held by another owner: waiting (--wait %v)\n", resource, &o.take.wait)
		}
	}

	acquirer := &acquirer{Locker: locker, ctx: acqCtx, wait: o.take.wait, hook: hook}
	var res runResult
	err = lock.Run(ctx, acquirer, resource, o.ttl, func(runCtx context.Context, l lock.Lock) error {
		res = sup.runCommand(runCtx, l, argv, o)
		return nil
	})
	if !res.acquired {
		return acquireError(acqCtx, err, resource, o.mode, o.take, hook)
	}
	if err == nil && o.mode.plain() {
		err = unconfirmedRelease(watch, set)
	}
	if o.verbose && err == nil {
		fmt.Fprintf(a.stderr, "lockctl run: released %q\n", resource)
	}
	switch {
	case res.lost:
		return exitWith(exitLost, nil)
	case errors.Is(err, lock.ErrLost), errors.Is(err, lock.ErrNotHeld):
		// Found as the command exited, by the last extension or by the
		// release: the command may have run without the lock.
		return exitWith(exitLost, fmt.Errorf("the lock on %q was lost before the command exited with status %d (%s): it may have run without the lock", resource, res.code, lossReason(err)))
	case err != nil:
		fmt.Fprintf(a.stderr, "lockctl run: warning: releasing %q: %v (it frees when its TTL runs out)\n", resource, err)
	}
	if res.err != nil || res.code != 0 {
		return exitWith(res.code, res.err)
	}
	return nil
}

// unconfirmedRelease returns an error naming the stores of set that watch
// did not see confirm the release just made, or nil. It does not wait for
// the retries that a Redlock's Unlock leaves to the background: they end
// with lockctl, and the lock frees on those stores when its TTL runs out.
func unconfirmedRelease(watch *releaseWatch, set *storeSet) error {
	if missing, _ := watch.missing(set); missing != nil {
		return fmt.Errorf("%s did not confirm the release", strings.Join(missing, ", "))
	}
	return nil
}

// runResult is what became of the command.
type runResult struct {
	acquired bool
	lost     bool  // the lock was lost while the command ran
	code     int   // lockctl's exit status
	err      error // what to print, if anything
}

// supervisor runs the command and passes signals on to it.
type supervisor struct {
	a           *app
	interactive bool   // the command shares lockctl's process group
	name        string // the lockctl command, for messages: "run" when empty
	cancelAcq   context.CancelCauseFunc

	mu          sync.Mutex
	proc        *os.Process // the command, once started and until reaped
	interrupted os.Signal   // a signal that came before the command started
}

// command is the lockctl command the supervisor runs for, for messages.
func (s *supervisor) command() string {
	if s.name == "" {
		return "run"
	}
	return s.name
}

// catchSignals starts passing the signals lockctl gets to the command (or,
// before it starts, to abort), and returns the function that stops it.
func (s *supervisor) catchSignals() (stop func()) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	if !s.interactive {
		ignoreStop()
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case sig := <-sigs:
				s.deliver(sig)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		<-exited
	}
}

func (s *supervisor) deliver(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.proc != nil:
		if s.interactive && terminalSignal(sig) {
			return // the terminal sent it to the command as well
		}
		_ = signalChild(s.proc.Pid, !s.interactive, sig)
	case s.interrupted == nil:
		s.interrupted = sig
		s.cancelAcq(signalCause{sig})
	}
}

// signal sends sig to the command (and its group), if it still runs.
func (s *supervisor) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		_ = signalChild(s.proc.Pid, !s.interactive, sig)
	}
}

// runCommand runs argv under the held lock l until it exits, stopping it
// if runCtx ends (the lock was lost).
func (s *supervisor) runCommand(runCtx context.Context, l lock.Lock, argv []string, o *runOptions) runResult {
	a := s.a
	res := runResult{acquired: true}
	if o.verbose {
		fence := ""
		if l.Fence != 0 {
			fence = fmt.Sprintf(", fence %d", l.Fence)
		}
		if s.name == "elect" {
			fmt.Fprintf(a.stderr, "lockctl elect: elected for %q (term ttl %v%s)\n", l.Resource, o.ttl, fence)
		} else {
			fmt.Fprintf(a.stderr, "lockctl %s: acquired %q (ttl %v%s)\n", s.command(), l.Resource, o.ttl, fence)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	if o.fenceEnv != "" {
		cmd.Env = append(os.Environ(), o.fenceEnv+"="+strconv.FormatUint(l.Fence, 10))
	}
	cmd.SysProcAttr = childAttr(!s.interactive)

	// The kernel's kill-on-parent-death is tied to the thread that starts
	// the child: keep this goroutine on it until the command exits.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s.mu.Lock()
	if s.interrupted != nil {
		s.mu.Unlock()
		res.code = exitSignal + signalNumber(s.interrupted)
		res.err = fmt.Errorf("interrupted by %s before the command started", signalName(s.interrupted))
		return res
	}
	err := cmd.Start()
	if err == nil {
		s.proc = cmd.Process
	}
	s.mu.Unlock()
	if err != nil {
		res.code, res.err = exitNoExec, fmt.Errorf("cannot run %s: %w", argv[0], err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			res.code = exitNotFound
		}
		return res
	}

	if !s.interactive {
		stopReaper := startReaper(cmd.Process.Pid, func(err error) {
			fmt.Fprintf(a.stderr, "lockctl %s: warning: %v\n", s.command(), err)
		})
		defer stopReaper()
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-runCtx.Done():
		res.lost = true
		lost := fmt.Sprintf("lost the lock on %q", l.Resource)
		if s.name == "elect" {
			lost = fmt.Sprintf("the term for %q ended", l.Resource)
		}
		fmt.Fprintf(a.stderr, "lockctl %s: %s while the command ran (%s): sending SIGTERM to the command\n", s.command(), lost, lossReason(context.Cause(runCtx)))
		s.signal(sigTERM)
		kill := time.NewTimer(o.killAfter)
		select {
		case werr = <-waited:
			if !s.interactive {
				// What it started, in its group, must not run on without
				// the lock either: it gets the kill at the same time.
				s.killGroupAt(cmd.Process.Pid, kill.C, o.killAfter)
			}
		case <-kill.C:
			fmt.Fprintf(a.stderr, "lockctl %s: the command still runs %v after SIGTERM: sending SIGKILL\n", s.command(), o.killAfter)
			s.signal(sigKILL)
			werr = <-waited
		}
		kill.Stop()
	}
	s.mu.Lock()
	s.proc = nil // reaped: its pid may be reused
	s.mu.Unlock()

	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		if sig, ok := waitSignal(ee.ProcessState); ok {
			res.code = exitSignal + signalNumber(sig) // as shells report it
		} else {
			res.code = ee.ExitCode()
		}
	default:
		res.code, res.err = exitFailure, fmt.Errorf("waiting for the command: %w", werr)
	}
	return res
}

// killGroupAt waits, after a loss, until no process is left in the
// command's process group pgid (the command itself has exited), or until
// deadline fires, when it kills those left. The command's exit does not
// end what it started: without it, a process that ignores SIGTERM would
// run on without the lock.
func (s *supervisor) killGroupAt(pgid int, deadline <-chan time.Time, killAfter time.Duration) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for groupAlive(pgid) {
		select {
		case <-deadline:
			fmt.Fprintf(s.a.stderr, "lockctl %s: processes the command started still run %v after SIGTERM: sending SIGKILL\n", s.command(), killAfter)
			_ = signalChild(pgid, true, sigKILL)
			return
		case <-tick.C:
		}
	}
}

// lossReason explains the cause with which lock.Run ended the command's
// context.
func lossReason(cause error) string {
	switch {
	case errors.Is(cause, lock.ErrNotHeld):
		return "the stores no longer hold it: it expired, was taken over, or was released with --force"
	case errors.Is(cause, lock.ErrLost):
		// `lock "r" lost: why: detail`: the message around it names the lock.
		if _, why, ok := strings.Cut(cause.Error(), " lost: "); ok {
			return why
		}
		return cause.Error()
	case cause != nil:
		return cause.Error()
	}
	return "unknown reason"
}
