package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
)

// app is one invocation of lockctl: its standard streams and environment.
type app struct {
	stdin  *os.File
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// command is a subcommand of lockctl.
type command struct {
	name     string
	summary  string // one line, for the list of commands
	usage    string // the synopsis, after "lockctl "
	doc      string // what it does, shown by --help before the flags
	examples string // shown by --help after the flags
	// interspersed lets flags follow positional arguments (status RES
	// --json); run takes everything after RESOURCE as the command.
	interspersed bool
	// flags registers the command's flags on fs and returns the function
	// that runs it with the positional arguments.
	flags func(fs *flag.FlagSet) func(ctx context.Context, a *app, args []string) error
}

var commands = []*command{runCommand, electCommand, acquireCommand, extendCommand, releaseCommand, statusCommand, checkCommand, benchCommand, completionCommand}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// main runs lockctl with args (without the program name) and returns its
// exit status.
func (a *app) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		a.shortUsage(a.stderr)
		return exitUsage
	}
	out := &errWriter{w: a.stdout}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return a.written("help", out, a.help(out, args[1:]))
	case "--version", "-version":
		bi, ok := debug.ReadBuildInfo()
		fmt.Fprint(out, versionText(bi, ok))
		return a.written("--version", out, exitOK)
	case completeCommand:
		return a.complete(args[1:])
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(a.stderr, "lockctl: unknown command %q\n", args[0])
		a.shortUsage(a.stderr)
		return exitUsage
	}
	fs := newFlagSet(cmd.name)
	run := cmd.flags(fs)
	pos, err := parseFlags(fs, args[1:], cmd.interspersed)
	switch {
	case errors.Is(err, flag.ErrHelp):
		a.commandHelp(out, cmd, fs)
		return a.written(cmd.name, out, exitOK)
	case err != nil:
		err = &usageError{err: err}
	default:
		err = run(ctx, a, pos)
	}
	if brokenPipeQuiet(cmd.name, err) {
		// As a tool killed by SIGPIPE (lockctl status | head -1): nothing
		// is held, so nothing more to say.
		return exitSignal + int(syscall.SIGPIPE)
	}
	code := exitCode(err)
	var ee *exitError
	if err != nil && !(errors.As(err, &ee) && ee.err == nil) {
		fmt.Fprintf(a.stderr, "lockctl %s: %v\n", cmd.name, err)
	}
	if code == exitUsage {
		fmt.Fprintf(a.stderr, "Usage: lockctl %s\nRun 'lockctl help %s' for its flags and examples.\n", cmd.usage, cmd.name)
	}
	return code
}

// shortUsage is what a mistaken command line gets: the synopsis and the
// commands, without the full help.
func (a *app) shortUsage(w io.Writer) {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	fmt.Fprintf(w, "Usage: lockctl COMMAND [flags] [arguments]\nCommands: %s\nRun 'lockctl help' for details.\n", strings.Join(names, ", "))
}

// help is lockctl help [command|topic], printed to w.
func (a *app) help(w io.Writer, args []string) int {
	if len(args) == 0 {
		a.mainUsage(w)
		return exitOK
	}
	if len(args) > 1 {
		fmt.Fprintf(a.stderr, "lockctl help: one command or topic at a time, not %q\n", strings.Join(args, " "))
		a.shortUsage(a.stderr)
		return exitUsage
	}
	switch args[0] {
	case "stores", "urls":
		fmt.Fprint(w, storesHelp)
		return exitOK
	case "exit-codes", "exit":
		fmt.Fprint(w, exitCodesHelp)
		return exitOK
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(a.stderr, "lockctl help: no command or topic %q\n", args[0])
		a.shortUsage(a.stderr)
		return exitUsage
	}
	fs := newFlagSet(cmd.name)
	cmd.flags(fs)
	a.commandHelp(w, cmd, fs)
	return exitOK
}

func (a *app) mainUsage(w io.Writer) {
	fmt.Fprint(w, `lockctl takes distributed locks on Redis, Redlock, memcached, etcd and
PostgreSQL from the shell: flock(1) across machines.

Usage:
  lockctl COMMAND [flags] [arguments]
  lockctl --version

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Stores are given as URLs with --store (repeatable) or in $`+storesEnv+`:
  redis://[user:pass@]host[:port][/db]     one Redis server (rediss:// for TLS;
                                            valkey://, unix:///path.sock too)
  redis+cluster://host:port[,host:port...]  a Redis Cluster
  redis+sentinel://host:port[,...]/master   a Sentinel-managed master
  memcache://host[:port]                    one memcached server
  etcd://host[:port][,host[:port]...]       an etcd cluster (etcds:// for TLS)
  postgres://[user@]host[:port]/database    a PostgreSQL database (postgresql://)
  memory://                                 in-process (check, bench, demos)
Several --store flags make a Redlock over independent stores.
'lockctl help stores' has every form and option.

`+exitCodesHelp+`
Run 'lockctl help COMMAND' (or lockctl COMMAND --help) for its flags and
examples. To try it with nothing installed but Go:

  go run github.com/lockkit/lock/cmd/lockctl@latest check
`)
}

// commandHelp prints cmd's usage, description, flags and examples.
func (a *app) commandHelp(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: lockctl %s\n\n%s\n", cmd.usage, strings.TrimSpace(cmd.doc))
	var n int
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, fs)
	}
	fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(cmd.examples, "\n"))
}

// printFlags lists fs's flags as --name, the way the help texts and docs
// write them.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		if def := f.DefValue; def != "" && def != "false" && def != "[]" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, usage)
	})
}

// brokenPipeQuiet reports whether err, the error of command name, is a
// write to a pipe nobody reads any more (EPIPE: see catchBrokenPipes) in
// a command that holds nothing once it returns, so that lockctl exits as
// SIGPIPE would have ended it, without a word. acquire and extend, which
// write the lock they hold, say what they did about it.
func brokenPipeQuiet(name string, err error) bool {
	return errors.Is(err, syscall.EPIPE) && name != "acquire" && name != "extend"
}

// errWriter is a writer that remembers the first error of its writes, so
// that output printed with fmt.Fprint* is checked once, at its end, and a
// reader that went away ends lockctl as it does status (brokenPipeQuiet).
type errWriter struct {
	w   io.Writer
	err error
}

// Write writes p, or fails with the first error once a write failed.
func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// written returns code, the exit status of what printed its output to w
// outside a command's run (help, --version), unless a write to w failed:
// then 141 when the reader went away, as for a command, or else 1.
func (a *app) written(name string, w *errWriter, code int) int {
	switch {
	case w.err == nil:
		return code
	case brokenPipeQuiet(name, w.err):
		return exitSignal + int(syscall.SIGPIPE)
	}
	fmt.Fprintf(a.stderr, "lockctl %s: %v\n", name, w.err)
	return exitFailure
}
