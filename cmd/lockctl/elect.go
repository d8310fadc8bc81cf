package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/lockkit/lock"
)

var electCommand = &command{
	name:    "elect",
	summary: "run a command only while elected leader of a role",
	usage:   "elect [flags] ROLE [--] COMMAND [ARGS...]",
	doc: `Campaigns for ROLE among every lockctl elect on the same stores, waits until
elected, runs COMMAND while leading, resigns when the command exits, and
exits with the command's status. Flags go before ROLE; everything after it
is the command.

The leader renews its term in the background. If the term ends — renewals
failed, or the stores lost it — the command gets SIGTERM a tenth of the
lock's validity before anyone else can be elected, then SIGKILL after
--kill-after, and lockctl exits with status 76. Run it under a supervisor
(systemd, a restart loop) to campaign again. If the resignation fails, or a
store of a Redlock does not confirm it, elect names the store in a warning
on stderr (the role frees there when its TTL runs out) and exits with the
command's status all the same. With --fence-env the command
gets the term's fence, which grows with every term, to pass to systems
that can refuse a deposed leader's writes.

Signals are passed on to the command as by run; while campaigning, a
signal ends the campaign.`,
	examples: `  # One scheduler among all the machines; the others wait to take over.
  lockctl elect --store redis://redis.internal:6379 scheduler -- ./scheduler

  # Redlock, a 10s term, the fence for the leader's writes.
  lockctl elect --ttl 10s --fence-env LEADER_FENCE compactor -- ./compact --forever`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		o := &runOptions{stores: addStoreFlags(fs)}
		fs.DurationVar(&o.ttl, "ttl", 15*time.Second, "term TTL; renewed every third of it, so the term of a crashed lockctl frees within a TTL")
		fs.StringVar(&o.fenceEnv, "fence-env", "", "pass the term's fence to the command in environment variable `NAME` (stores that fence)")
		fs.DurationVar(&o.killAfter, "kill-after", 10*time.Second, "when the term ends, how long after SIGTERM the command gets SIGKILL")
		fs.BoolVar(&o.verbose, "verbose", false, "report on stderr when elected and when resigning")
		return func(ctx context.Context, a *app, args []string) error {
			o.fenceEnvGiven = flagGiven(fs, "fence-env")
			return a.elect(ctx, o, args)
		}
	},
}

func (a *app) elect(ctx context.Context, o *runOptions, args []string) error {
	if len(args) == 0 {
		return usagef("missing ROLE and COMMAND")
	}
	role, argv := args[0], args[1:]
	switch {
	case len(argv) > 0 && argv[0] == "--":
		argv = argv[1:]
	case len(argv) > 0 && strings.HasPrefix(argv[0], "-"):
		return usagef("%q after ROLE: flags go before ROLE (everything after it is the command)", argv[0])
	}
	if err := checkName("ROLE", role); err != nil {
		return err
	}
	switch {
	case len(argv) == 0:
		return usagef("missing COMMAND after ROLE %q", role)
	case o.killAfter < 0:
		return usagef("--kill-after %v: want a duration >= 0", o.killAfter)
	}
	if err := checkFenceEnv(o.fenceEnvGiven, o.fenceEnv); err != nil {
		return err
	}
	if err := positiveDuration("ttl", o.ttl); err != nil {
		return err
	}
	set, err := a.openForFence(ctx, o.stores, o.fenceEnv != "")
	if err != nil {
		return err
	}
	defer set.Close()
	if set.inProcess() {
		fmt.Fprintln(a.stderr, "lockctl elect: warning: memory:// terms exist only inside this lockctl process: other processes are not kept out")
	}
	set.opts.Holder = runHolder(argv) // status names the leader
	watch := newReleaseWatch(true)
	locker, err := set.locker(watch)
	if err != nil {
		return &usageError{err: err}
	}
	election, err := lock.NewElection(locker, role, o.ttl)
	if err != nil {
		return &usageError{err: err}
	}

	sup := &supervisor{a: a, interactive: inForeground(a.stdin), name: "elect"}
	campaign, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sup.cancelAcq = cancel
	stopSignals := sup.catchSignals()
	defer stopSignals()
	if o.verbose {
		fmt.Fprintf(a.stderr, "lockctl elect: campaigning for %q\n", role)
	}
	term, err := election.Campaign(campaign)
	if err != nil {
		var sig signalCause
		if errors.As(context.Cause(campaign), &sig) {
			return exitWith(exitSignal+signalNumber(sig.sig), fmt.Errorf("interrupted by %s while campaigning for %q", signalName(sig.sig), role))
		}
		if errors.Is(err, lock.ErrInvalid) {
			return &usageError{err: err}
		}
		return err
	}
	res := sup.runCommand(term.Context(), term.Lock(), argv, o)
	err = term.Resign(context.WithoutCancel(ctx))
	if err == nil {
		err = unconfirmedRelease(watch, set)
	}
	if o.verbose && err == nil {
		fmt.Fprintf(a.stderr, "lockctl elect: resigned %q\n", role)
	}
	switch {
	case res.lost:
		return exitWith(exitLost, nil)
	case errors.Is(err, lock.ErrLost), errors.Is(err, lock.ErrNotHeld):
		// Found as the command exited, by the last renewal or by the
		// resignation: another may have led meanwhile.
		return exitWith(exitLost, fmt.Errorf("the term for %q ended before the command exited with status %d (%s): it may have run while another led", role, res.code, lossReason(err)))
	case err != nil:
		fmt.Fprintf(a.stderr, "lockctl elect: warning: resigning %q: %v (the role frees when its TTL runs out)\n", role, err)
	}
	if res.err != nil || res.code != 0 {
		return exitWith(res.code, res.err)
	}
	return nil
}
