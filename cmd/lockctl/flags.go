package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
)

// storesEnv names the environment variable that lists the stores when no
// --store flag is given, so that passwords need not be on the command line.
const storesEnv = "LOCKCTL_STORES"

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("lockctl "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed by app.main, with the usage
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args. With interspersed, flags may follow positional
// arguments (everything after "--" is positional); otherwise parsing stops
// at the first positional argument. It returns the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string, interspersed bool) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, durationHint(fs, err)
		}
		rest := fs.Args()
		used := len(args) - len(rest)
		if !interspersed || len(rest) == 0 || (used > 0 && args[used-1] == "--") {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// durationHint says what a duration looks like in err, the error of a
// duration flag's value, where the flag package says only "parse error":
// invalid value "5" for flag -ttl: parse error.
func durationHint(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	rest, ok := strings.CutSuffix(msg, ": parse error")
	_, name, found := strings.Cut(rest, " for flag -")
	if !ok || !found {
		return err
	}
	if f := fs.Lookup(name); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				return errors.New(rest + ": want a duration with a unit, such as 500ms, 30s, 5m or 1h30m")
			}
		}
	}
	return err
}

// storeFlags are the flags that choose the stores, shared by every command.
type storeFlags struct {
	urls         []string
	quorum       string
	storeTimeout time.Duration
}

func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	sf := &storeFlags{}
	fs.Func("store", "store `URL`; repeat for a Redlock over several stores (default: $"+storesEnv+"; see 'lockctl help stores')", func(s string) error {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("empty store URL")
		}
		sf.urls = append(sf.urls, s)
		return nil
	})
	fs.StringVar(&sf.quorum, "quorum", "majority", "with several stores, how many must grant a lock: majority, all, or a number `N` above half")
	fs.DurationVar(&sf.storeTimeout, "store-timeout", 250*time.Millisecond, "with several stores, the bound on each store call (keep it small next to the TTL)")
	return sf
}

// parseQuorum parses --quorum for n stores.
func parseQuorum(s string, n int) (lock.Quorum, error) {
	switch strings.ToLower(s) {
	case "majority", "":
		return quorum.Majority{}, nil
	case "all", "unanimous":
		return quorum.Unanimous{}, nil
	}
	k, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return nil, usagef("--quorum %q: want majority, all, or a number of stores", s)
	case n == 1 && k != 1:
		return nil, usagef("--quorum %d with one store: want 1 (or majority, or all)", k)
	case k <= n/2 || k > n:
		return nil, usagef("--quorum %d with %d stores: want more than half of them (%d to %d), or two owners could hold a lock at once", k, n, n/2+1, n)
	}
	return quorum.AtLeast(k), nil
}

// waitValue is the value of run --wait: how long to wait for a held lock.
type waitValue struct {
	d       time.Duration
	forever bool
}

func (w *waitValue) String() string {
	if w.forever {
		return "forever"
	}
	return w.d.String()
}

func (w *waitValue) Set(s string) error {
	switch s {
	case "forever", "inf", "infinity":
		*w = waitValue{forever: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 0, 30s or 5m, or forever")
	}
	*w = waitValue{d: d}
	return nil
}

// positiveDuration checks a duration flag.
func positiveDuration(name string, d time.Duration) error {
	if d <= 0 {
		return usagef("--%s %v: want a positive duration", name, d)
	}
	return nil
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// checkName refuses an empty RESOURCE or ROLE (what) before any store is
// opened: every store refuses the name, and release --force would send it.
func checkName(what, name string) error {
	if name == "" {
		return usagef("empty %s: want a name such as deploy/prod", what)
	}
	return nil
}

// checkFenceEnv refuses a --fence-env NAME that a shell would not pass on:
// a name is letters, digits and underscores, not starting with a digit.
// exec passes any name without '=' to the command, but sh drops the ones
// it cannot name (1BAD, A-B), and a wrapper script's child would then get
// no fence and no error.
func checkFenceEnv(given bool, name string) error {
	if !given {
		return nil
	}
	ok := name != "" && (name[0] < '0' || name[0] > '9')
	for _, c := range []byte(name) {
		ok = ok && (c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z')
	}
	if !ok {
		return usagef("--fence-env %q: not an environment variable name: want letters, digits and _, not starting with a digit", name)
	}
	return nil
}
