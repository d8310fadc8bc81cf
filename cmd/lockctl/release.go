package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockkit/lock"
)

var releaseCommand = &command{
	name:         "release",
	summary:      "release a lock taken by acquire, or delete one whoever holds it",
	usage:        "release --lock FILE [flags]\n       lockctl release --force [--yes] [-n N | --shared | --exclusive] [flags] RESOURCE",
	interspersed: true,
	doc: `With --lock, releases the lock recorded in FILE by lockctl acquire (with
--lock -, read on stdin), on the same stores, and removes FILE. Stores other
than those FILE records are refused with status 2, before anything is sent.
Exits 0 when released; 76 if the lock was no longer held (it expired, was
taken over, or was released with --force: the work done under it may have
overlapped another owner's), and FILE is removed all the same; 1 if a store
failed, or did not confirm the release within --timeout, in which case FILE
stays for another try and the lock frees when its TTL runs out. When a
quorum of a Redlock's stores released it, FILE records that: another try
releases the rest and exits 0 once every store has confirmed.

With --force, deletes the lock on RESOURCE on every store, whoever holds
it, for a lock whose owner is known to be gone and whose TTL is too long to
wait out. Locks are normally released by their owner's token; --force says
you mean to bypass that.

A lock is apart from what lockctl run -n N, --shared and --exclusive take
on RESOURCE: give the same flag to release that. -n N deletes the N
permits; --shared or --exclusive (either one) deletes the read-write lock,
the writer's intent and the readers' permits. Without them, if the lock was
not held but a read-write lock or permits are, release says so and names
the flag to give (it finds permits only where the stores tell the limit
they were taken with: redis). A lone redis store keeps permits and readers
itself and cannot delete them whoever holds them: if any is held, release
deletes the rest, says so and exits 1; they free when their TTL runs out.
-n N other than the limit the permits were taken with exits 2, before
anything is released.

The owner is not told. A lockctl run holding the lock notices at its next
extension (within a third of its TTL), stops its command and exits with 76;
a program using the library gets ErrNotHeld at its next Extend or Unlock
(lock.Run cancels its context with ErrLost). Until then, the old owner and
a new one may both be running.

On a terminal, release asks for confirmation; --yes skips the question, and
is required when stdin is not a terminal. Exits 0 when the lock is gone
(or was not held), 1 if a store failed or could not release permits, or
the question was not answered yes (nothing is released then).`,
	examples: `  lockctl release --lock "$RUNNER_TEMP/deploy.lock"
  lockctl release --force --store redis://localhost:6379 deploy/prod
  lockctl release --force --yes --exclusive deploy/prod
  LOCKCTL_STORES="memcache://mc1:11211 memcache://mc2:11211 memcache://mc3:11211" \
    lockctl release --force --yes nightly-report`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		sf := addStoreFlags(fs)
		file := fs.String("lock", "", "release the lock in `FILE`, written by acquire (- for stdin)")
		force := fs.Bool("force", false, "release RESOURCE whoever holds it")
		yes := fs.Bool("yes", false, "with --force, do not ask for confirmation")
		mode := newModeFlags(fs,
			"with --force, release the permits of RESOURCE that run -n `N` takes",
			"with --force, release the read-write lock that run --shared and --exclusive take on RESOURCE: the writer's intent and the readers' permits",
			"with --force, the same as --shared")
		timeout := fs.Duration("timeout", 10*time.Second, "give up on the stores after this long")
		return func(ctx context.Context, a *app, args []string) error {
			if *file != "" {
				switch {
				case *force || *yes || !mode.plain():
					return usagef("--lock releases the lock in the file as its owner; --force and --yes are for releasing a lock whoever holds it, and so are -n, --shared and --exclusive")
				case len(args) != 0:
					return usagef("unexpected argument %q: the resource is in the lock file", args[0])
				}
				if err := positiveDuration("timeout", *timeout); err != nil {
					return err
				}
				return a.releaseFile(ctx, sf, *file, *timeout)
			}
			switch {
			case !*force:
				return usagef("release needs --lock FILE (a lock taken by acquire) or --force RESOURCE (whoever holds it; its owner is not told)")
			case len(args) != 1:
				return usagef("want one RESOURCE, got %d arguments", len(args))
			case args[0] == "":
				return checkName("RESOURCE", args[0])
			case !*yes && !isTerminal(a.stdin):
				return usagef("stdin is not a terminal, so lockctl cannot ask for confirmation: add --yes")
			}
			if err := mode.check(); err != nil {
				return err
			}
			if err := positiveDuration("timeout", *timeout); err != nil {
				return err
			}
			return a.release(ctx, sf, args[0], mode, *yes, *timeout)
		}
	},
}

// releaseFile releases the lock in file as its owner. On a Redlock, it
// waits, within timeout, for every store to confirm the release: Unlock
// succeeds once a quorum released the lock, and its retries on the other
// stores would end with lockctl, FILE gone while they hold the lock.
func (a *app) releaseFile(ctx context.Context, sf *storeFlags, file string, timeout time.Duration) error {
	var released lockFile
	watch := newReleaseWatch(false)
	err := a.withHeldLock(ctx, sf, file, timeout, watch, func(ctx context.Context, set *storeSet, locker lock.Locker, lf lockFile) error {
		released = lf
		// After a release that a store did not confirm, a quorum answers
		// that it holds nothing: the lock is released once the rest do.
		if err := locker.Unlock(ctx, lf.Lock); err != nil && !(lf.ReleasedOnQuorum && errors.Is(err, lock.ErrNotHeld)) {
			return err
		}
		if missing := watch.unconfirmed(ctx, set); missing != nil {
			if !lf.ReleasedOnQuorum && file != stdio {
				lf.ReleasedOnQuorum = true
				a.recordReleasedOnQuorum(file, lf)
			}
			return fmt.Errorf("%q: released on a quorum of the stores, but %s did not confirm the release within --timeout %v and may hold the lock until its TTL runs out; %s stays for another try", lf.Resource, strings.Join(missing, ", "), timeout, lockFileName(file))
		}
		return nil
	})
	if code := exitCode(err); released.Token != "" && (code == exitOK || code == exitLost) {
		a.removeLockFile(file, released)
	}
	return err
}

// recordReleasedOnQuorum records in file that its lock was released on a
// quorum (see lockFile.ReleasedOnQuorum), or warns that it could not.
func (a *app) recordReleasedOnQuorum(file string, lf lockFile) {
	if err := a.writeLockFile(file, lf); err != nil {
		fmt.Fprintf(a.stderr, "lockctl: warning: recording the release in %s: %v (another release will report the lock as no longer held)\n", file, err)
	}
}

func (a *app) release(ctx context.Context, sf *storeFlags, resource string, mode *modeFlags, yes bool, timeout time.Duration) error {
	octx, ocancel := context.WithTimeout(ctx, timeout)
	defer ocancel()
	set, err := a.openStores(octx, sf, "", nil)
	if err != nil {
		return err
	}
	defer set.Close()
	if err := set.checkResource(resource); err != nil {
		return err
	}
	// Slots past -n N would be left held, as run -n N would refuse them.
	if n := mode.permits; n > 0 {
		if other := set.permitLimit(octx, resource); other != 0 && other != n {
			return exitWith(exitUsage, fmt.Errorf("the permits on %q were taken with -n %d, not -n %d: nothing released", resource, other, n))
		}
	}
	ocancel()
	if !yes {
		// The question waits for a person: the timeout starts after it.
		fmt.Fprintf(a.stderr, "Release %s on %s whoever holds it? Its owner is not told and may go on working. [y/N] ", mode.what(resource), set.names())
		answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return exitWith(exitFailure, errors.New("not released"))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	locks, permits := mode.forced(set, resource)
	lines := make([]string, len(set.stores))
	released, failed := 0, 0
	for i, s := range set.stores {
		held, err := s.forceReleaseAll(ctx, locks, permits)
		switch {
		case err != nil:
			failed++
			lines[i] = "error: " + err.Error()
		case held:
			released++
			lines[i] = "released"
		default:
			lines[i] = "was not held"
		}
	}
	state := "was not held"
	switch {
	case failed > 0:
		state = fmt.Sprintf("%d of %d stores failed", failed, len(set.stores))
	case released > 0:
		state = "released"
	case mode.plain():
		if other := heldOtherwise(ctx, set, resource); other != "" {
			state = "was not held as a lock; " + other
		}
	}
	w := &errWriter{w: a.stdout}
	fmt.Fprintf(w, "%s: %s\n", resource, state)
	for i, spec := range set.specs {
		fmt.Fprintf(w, "  %s  %s\n", spec.name, lines[i])
	}
	if w.err != nil {
		return w.err
	}
	if failed > 0 {
		return exitWith(exitFailure, nil)
	}
	return nil
}

// forceReleaseAll deletes the locks and the permits (those the store
// keeps itself) on o whoever holds them, and reports whether any was
// held. It stops at the first failure. Permits that the store cannot
// delete are a failure if any is held.
func (o *openStore) forceReleaseAll(ctx context.Context, locks, permits []string) (bool, error) {
	released := false
	for _, name := range locks {
		held, err := o.forceRelease(ctx, name)
		if err != nil {
			return released, err
		}
		released = released || held
	}
	for _, name := range permits {
		if o.forceReleasePermits != nil {
			held, err := o.forceReleasePermits(ctx, name)
			if err != nil {
				return released, err
			}
			released = released || held
			continue
		}
		n, err := o.Store.(lock.Permitter).Permits(ctx, name)
		switch {
		case err != nil:
			return released, err
		case n > 0:
			return released, fmt.Errorf("the store keeps permits itself and cannot release them whoever holds them: %d held on %q, until their holders release them or their TTL runs out", n, name)
		}
	}
	return released, nil
}

// heldOtherwise says what run --shared, --exclusive or -n N holds on
// resource, which a lock on it is apart from, as status's first line
// does, and the flag that releases it; "" if nothing is held or the stores
// cannot tell. Permits are found only where the stores tell the limit
// they were taken with.
func heldOtherwise(ctx context.Context, set *storeSet, resource string) string {
	locker, err := set.locker(nil)
	if err != nil {
		return ""
	}
	free := false
	rep := statusReport{Held: &free, RWLock: rwStatusOf(ctx, set, locker, resource)}
	flag := "--shared"
	switch rw := rep.RWLock; {
	case rw.Writer != nil && *rw.Writer == writerHolds:
		flag = "--exclusive"
	case rw.held():
	default:
		n := set.permitLimit(ctx, resource)
		if n == 0 {
			return ""
		}
		rep.Permits = permitsOf(ctx, set, locker, resource, n)
		flag = "-n " + strconv.Itoa(n)
	}
	state := rep.state()
	if state == "free" || strings.HasPrefix(state, "lock free") {
		return ""
	}
	return state + ": add " + flag + " to release it"
}

// releaseWatch is a Hook that follows which stores of a Redlock may hold
// its lock, from the answers of their calls, so that lockctl can tell
// whether a release left the lock on a store. A Redlock's Unlock succeeds
// once a quorum released the lock, and leaves the other stores to retries
// in the background that end with lockctl: such a store may hold the lock
// until its TTL runs out.
type releaseWatch struct {
	mu      sync.Mutex
	taken   bool          // the watch saw the lock taken: a store not seen holds nothing
	mayHold map[int]bool  // by store index, once a call answered
	changed chan struct{} // closed, and replaced, when a store is seen to let go
}

// newReleaseWatch returns a releaseWatch for a lock it sees taken (run,
// elect), or not (release --lock, where every store may hold it).
func newReleaseWatch(taken bool) *releaseWatch {
	return &releaseWatch{taken: taken, mayHold: map[int]bool{}, changed: make(chan struct{})}
}

// Observe records whether the store of a call may hold the lock after it:
// a grant, an extension or a failed acquisition (it may have applied)
// leaves it holding; a release, or an answer that it holds nothing, not.
func (w *releaseWatch) Observe(_ context.Context, e lock.Event) {
	if e.Kind != lock.EventStoreCall {
		return
	}
	var holds bool
	switch {
	case e.StoreOp == "release" && (e.Err == nil || errors.Is(e.Err, lock.ErrNotHeld)),
		e.StoreOp == "extend" && errors.Is(e.Err, lock.ErrNotHeld):
		holds = false
	case e.StoreOp == "acquire" && !errors.Is(e.Err, lock.ErrNotAcquired),
		e.StoreOp == "extend" && e.Err == nil:
		holds = true
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	was, seen := w.mayHold[e.StoreIndex]
	w.mayHold[e.StoreIndex] = holds
	if !holds && (was || !seen) {
		close(w.changed)
		w.changed = make(chan struct{})
	}
}

// unconfirmed waits until no store of set may hold the lock, or ctx ends,
// and returns the names of the stores that may, or nil.
func (w *releaseWatch) unconfirmed(ctx context.Context, set *storeSet) []string {
	for {
		missing, changed := w.missing(set)
		if missing == nil {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return missing
		}
	}
}

// missing returns the names of the stores of set that may hold the lock,
// or nil, and a channel closed when a store is next seen to let go. A
// single store has no background retries: its Unlock's answer is final.
// A watch that saw the lock taken skips the stores lockctl never reached.
func (w *releaseWatch) missing(set *storeSet) ([]string, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(set.stores) < 2 {
		return nil, w.changed
	}
	var missing []string
	for i, spec := range set.specs {
		holds, seen := w.mayHold[i]
		if !seen {
			holds = !w.taken
		}
		if holds && !(w.taken && set.down[i] != nil) {
			missing = append(missing, spec.name)
		}
	}
	return missing, w.changed
}

// hookList is a Hook that passes each event to every hook in it.
type hookList []lock.Hook

// Observe passes e to every hook.
func (hs hookList) Observe(ctx context.Context, e lock.Event) {
	for _, h := range hs {
		h.Observe(ctx, e)
	}
}
