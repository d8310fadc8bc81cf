package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lockkit/lock"
)

// acquire and extend, with release --lock, hold a lock across the steps
// of a job: acquire takes it and records it in a lock file, and exits
// holding it; later steps extend it and release it with that file.

const defaultHoldTTL = 5 * time.Minute

var acquireCommand = &command{
	name:         "acquire",
	summary:      "take a lock and keep it after lockctl exits, for jobs of several steps",
	usage:        "acquire [flags] RESOURCE",
	interspersed: true,
	doc: `Acquires the lock on RESOURCE and exits holding it, for jobs whose steps run
as separate processes (CI jobs, scripts): later steps extend it (lockctl
extend) and release it (lockctl release --lock). Nothing extends it in
between: pick a --ttl that covers the steps, or extend it between them.

The lock is written to --lock FILE, as one line of JSON (a lock.Lock of the
library, so that a Go program can pick it up): resource, token, validUntil
and fence, and the stores it was taken on (their servers, database and key
prefix or table, never a password), so that extend and release refuse
other stores. The token is the owner's secret: whoever reads it can release
the lock. lockctl creates FILE readable by you only (mode 0600), refuses to
overwrite one that exists, and never takes the token on a command line.
Without --lock, or with --lock -, the lock is printed on stdout: capture it
in a variable rather than let it reach a log.

If the lock is held by another owner, acquire fails at once with status 75
(--conflict-exit-code), or waits for it (--wait). memory:// cannot be used:
its locks end with the lockctl process.

With several stores, acquire exits once every store has answered (each
within --store-timeout), with the lock extended on all that hold it and
taken again on those that missed it, rather than on the bare quorum that
granted it first.`,
	examples: `  # The steps of a CI job, each its own process ($RUNNER_TEMP: a directory
  # of the job's own); the last also belongs in the job's cleanup.
  lockctl acquire --ttl 30m --wait 10m --lock "$RUNNER_TEMP/deploy.lock" deploy/prod
  ./migrate.sh
  lockctl extend --ttl 30m --lock "$RUNNER_TEMP/deploy.lock"
  ./deploy.sh
  lockctl release --lock "$RUNNER_TEMP/deploy.lock"

  # In a variable, with the fence read by jq.
  lock=$(lockctl acquire deploy/prod) || exit
  fence=$(printf '%s' "$lock" | jq .fence)
  printf '%s' "$lock" | lockctl release --lock -`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		o := &acquireOptions{stores: addStoreFlags(fs), take: addTakeFlags(fs)}
		fs.DurationVar(&o.ttl, "ttl", defaultHoldTTL, "lock TTL: the lock frees by itself this long after acquire (or the last extend)")
		fs.StringVar(&o.file, "lock", stdio, "write the lock to `FILE` (mode 0600), or to stdout with -")
		return func(ctx context.Context, a *app, args []string) error { return a.acquire(ctx, o, args) }
	},
}

type acquireOptions struct {
	stores *storeFlags
	take   *takeFlags
	ttl    time.Duration
	file   string
}

func (a *app) acquire(ctx context.Context, o *acquireOptions, args []string) (err error) {
	if len(args) != 1 {
		return usagef("want one RESOURCE, got %d arguments", len(args))
	}
	resource := args[0]
	if err := checkName("RESOURCE", resource); err != nil {
		return err
	}
	if o.file == "" {
		return usagef(`--lock "": want a FILE to write the lock to, or - for stdout`)
	}
	if err := o.take.check(o.ttl); err != nil {
		return err
	}
	set, err := a.openStores(ctx, o.stores, "", a.stderr)
	if err != nil {
		return err
	}
	defer set.Close()
	if set.inProcess() {
		return usagef("memory:// locks end with this lockctl process: acquire needs a store of its own, such as redis:// or memcache://")
	}
	hook := &waitHook{}
	set.opts.Holder = acquireHolder()
	locker, err := set.locker(hook)
	if err != nil {
		return &usageError{err: err}
	}
	// Signals stop the wait from here on: once the lock file exists, a
	// signal can no longer leave it behind.
	acqCtx, stop := interruptible(ctx)
	defer stop()
	var file *os.File
	if o.file != stdio {
		if file, err = reserveLockFile(o.file); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				file.Close()
				os.Remove(o.file)
			}
		}()
	}
	l, err := (&acquirer{Locker: locker, ctx: acqCtx, wait: o.take.wait, hook: hook}).Lock(ctx, resource, o.ttl)
	if err != nil {
		return acquireError(acqCtx, err, resource, nil, o.take, hook)
	}
	if len(set.stores) > 1 {
		if l, err = settle(ctx, locker, l, o.ttl); err != nil {
			return fmt.Errorf("%q: acquired, then %w", resource, err)
		}
	}
	lf := lockFile{Lock: l, Stores: set.records(ctx)}
	if file == nil {
		_, err = a.stdout.Write(encodeLock(lf))
	} else {
		_, err = file.Write(encodeLock(lf))
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		// Unrecorded, the lock could only be released by force: give it back.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if uerr := locker.Unlock(uctx, l); uerr != nil {
			return fmt.Errorf("recording the lock on %q: %w; releasing the lock: %v (it frees when its TTL runs out)", resource, err, uerr)
		}
		return fmt.Errorf("recording the lock on %q: %w; released the lock", resource, err)
	}
	return nil
}

var extendCommand = &command{
	name:         "extend",
	summary:      "extend a lock taken by acquire",
	usage:        "extend --lock FILE [flags]",
	interspersed: true,
	doc: `Sets the TTL of the lock recorded in FILE by lockctl acquire to --ttl from
now, on the same stores, and records its new validity in FILE (with --lock -,
reads the lock on stdin and prints it extended on stdout). Stores other
than those FILE records are refused with status 2, before anything is sent.

Exits 0 when extended; 76 if the lock is no longer held (it expired, was
taken over, or was released with release --force: the work done since it
was taken may have overlapped another owner's), or was released by a
release --lock while extend ran (FILE is then not written again) or on a
quorum of a Redlock's stores by an earlier release --lock that kept FILE
(run release --lock again); 1 if a
store failed, in which case the lock may still be held until its TTL runs
out, or if FILE's directory cannot be written (found before the lock is
extended: the lock and FILE are left as they were).`,
	examples: `  lockctl extend --ttl 30m --lock "$RUNNER_TEMP/deploy.lock"
  lock=$(printf '%s' "$lock" | lockctl extend --lock -)`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		sf := addStoreFlags(fs)
		file := fs.String("lock", "", "the lock `FILE` written by acquire, or - for stdin (required)")
		ttl := fs.Duration("ttl", defaultHoldTTL, "the lock's new TTL, from now")
		timeout := fs.Duration("timeout", 10*time.Second, "give up on the stores after this long")
		return func(ctx context.Context, a *app, args []string) error {
			switch {
			case *file == "":
				return usagef("extend needs --lock FILE, the file written by lockctl acquire")
			case len(args) != 0:
				return usagef("unexpected argument %q: the resource is in the lock file", args[0])
			}
			for name, d := range map[string]time.Duration{"ttl": *ttl, "timeout": *timeout} {
				if err := positiveDuration(name, d); err != nil {
					return err
				}
			}
			return a.withHeldLock(ctx, sf, *file, *timeout, nil, func(ctx context.Context, _ *storeSet, locker lock.Locker, lf lockFile) error {
				if lf.ReleasedOnQuorum {
					return exitWith(exitLost, fmt.Errorf("the lock on %q was released on a quorum of its stores by release --lock, which kept %s because a store did not confirm: run release --lock again to free that store", lf.Resource, lockFileName(*file)))
				}
				if err := checkLockFileDir(*file); err != nil {
					return err // before the lock is extended: FILE stays true
				}
				next, err := locker.Extend(ctx, lf.Lock, *ttl)
				if err != nil {
					return err
				}
				lf.Lock = next
				if extendedHook != nil {
					extendedHook()
				}
				return a.writeLockFile(*file, lf)
			})
		}
	},
}

// extendedHook, if not nil, is called by extend between extending the
// lock and recording it in the lock file: the tests race a release there.
var extendedHook func()

// withHeldLock reads the lock in file, opens its stores, and calls f with
// them and a locker over them that reports to hook (if not nil), within
// timeout. Stores other than those the file records are a usage error,
// before anything is sent. It turns the errors of f into lockctl's
// answers: 76 when the lock is no longer held.
func (a *app) withHeldLock(ctx context.Context, sf *storeFlags, file string, timeout time.Duration, hook lock.Hook, f func(context.Context, *storeSet, lock.Locker, lockFile) error) error {
	lf, err := a.readLockFile(file)
	if err != nil {
		return err
	}
	specs, err := a.storeSpecs(sf, "")
	if err != nil {
		return err
	}
	if err := checkStores(file, lf, specs); err != nil {
		return err
	}
	l := lf.Lock
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	set, err := openStores(ctx, specs, sf, a.stderr)
	if err != nil {
		return err
	}
	defer set.Close()
	locker, err := set.locker(hook)
	if err != nil {
		return &usageError{err: err}
	}
	err = f(ctx, set, locker, lf)
	switch {
	case errors.Is(err, lock.ErrNotHeld):
		return exitWith(exitLost, fmt.Errorf("the lock on %q is no longer held (it expired, was taken over, or was released with --force): the work done under it may have overlapped another owner's", l.Resource))
	case errors.Is(err, lock.ErrInvalid):
		return &usageError{err: err}
	}
	return err
}

// settle returns l, taken by a Redlock, once every store has answered.
// Lock returns as soon as a quorum granted it; the calls still under way,
// and the retries of the stores that failed, would end with this process
// and leave the lock on a bare quorum, one store failure from being lost
// before its TTL. Extend waits for every answer, extends the lock on the
// stores that hold it and asks the others to take it. If it fails, l
// stands as the quorum granted it, unless it is no longer held.
func settle(ctx context.Context, locker lock.Locker, l lock.Lock, ttl time.Duration) (lock.Lock, error) {
	next, err := locker.Extend(ctx, l, ttl)
	switch {
	case err == nil:
		return next, nil
	case errors.Is(err, lock.ErrNotHeld):
		return lock.Lock{}, err
	}
	return l, nil
}
