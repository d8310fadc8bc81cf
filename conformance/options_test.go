package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/stores/memory"
)

// Options that make no sense fail the suite with a message naming the
// field, instead of panicking, or running rules that check nothing.

var badOptions = map[string]struct {
	opts  conformance.Options
	wants []string
	// everyRule: the test fails in every rule, not before the first.
	everyRule bool
}{
	"negative-contenders": {
		opts:  conformance.Options{Contenders: -1},
		wants: []string{"conformance: Options.Contenders = -1; want 0 (the default) or more"},
	},
	"negative-rounds": {
		opts:  conformance.Options{Rounds: -3},
		wants: []string{"conformance: Options.Rounds = -3; want 0 (the default) or more"},
	},
	"negative-ttl": {
		opts:  conformance.Options{TTL: -time.Second},
		wants: []string{"conformance: Options.TTL = -1s; want 0 (the default) or more"},
	},
	"negative-tolerance": {
		opts:  conformance.Options{Tolerance: -time.Millisecond},
		wants: []string{"conformance: Options.Tolerance = -1ms; want 0 (the default) or more"},
	},
	"negative-granularity": {
		opts:  conformance.Options{Granularity: -time.Millisecond},
		wants: []string{"conformance: Options.Granularity = -1ms; want 0 (the default) or more"},
	},
	"ttl-within-granularity": {
		opts:      conformance.Options{TTL: time.Second, Granularity: time.Second},
		wants:     []string{"--- FAIL: TestOptionsChild/AcquireFree ", "conformance: Options.TTL = 1s, no longer than the granularity (1s); want more"},
		everyRule: true,
	},
}

const optionsEnv = "LOCKKIT_CONFORMANCE_OPTIONS"

// TestOptionsChild is the child half of TestBadOptions.
func TestOptionsChild(t *testing.T) {
	name := os.Getenv(optionsEnv)
	if name == "" {
		t.Skip("run by TestBadOptions")
	}
	opts := badOptions[name].opts
	opts.Synctest = true
	conformance.TestStore(t, func(t *testing.T) lock.Store { return memory.New() }, &opts)
}

func TestBadOptions(t *testing.T) {
	for name, c := range badOptions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestOptionsChild$", "-test.v")
			cmd.Env = append(os.Environ(), optionsEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("conformance suite with %+v: err = %v; want a failing exit\n%s", c.opts, err, out)
			}
			if strings.Contains(string(out), "panic:") {
				t.Errorf("conformance suite with %+v panicked; want it to fail naming the option", c.opts)
			}
			if ran := strings.Contains(string(out), "=== RUN   TestOptionsChild/"); ran != c.everyRule {
				t.Errorf("conformance suite with %+v: a rule ran = %v; want %v", c.opts, ran, c.everyRule)
			}
			for _, w := range c.wants {
				if !strings.Contains(string(out), w) {
					t.Errorf("conformance suite with %+v: output lacks %q\n%s", c.opts, w, out)
				}
			}
		})
	}
}
