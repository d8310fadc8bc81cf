package conformance_test

// Black-box tests of the conformance kit's entry point, TestStore, from its
// package documentation: the memory store passes; a store that breaks a rule
// is reported by the rule's name. Failing runs happen in a subprocess (this
// test binary, re-run on a helper test) so that their failures can be read.

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	lock "github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/stores/memory"
)

const specHelperEnv = "LOCKKIT_SPEC_CONFORMANCE_HELPER"

// specBare has the three methods of lock.Store and nothing else.
type specBare struct{ m *memory.Store }

func (s specBare) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	return s.m.Acquire(ctx, r, tok, ttl)
}
func (s specBare) Release(ctx context.Context, r, tok string) error {
	return s.m.Release(ctx, r, tok)
}
func (s specBare) Exists(ctx context.Context, r string) (bool, error) {
	return s.m.Exists(ctx, r)
}

// specIgnoresToken is broken on purpose: its Release frees a held resource
// whatever the token.
type specIgnoresToken struct{ specBare }

func (s specIgnoresToken) Release(ctx context.Context, r, tok string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.m.Expire(r) {
		return nil
	}
	return lock.ErrNotHeld
}

// specDeadAsContention is broken on purpose: its Acquire reports a dead
// context as contention.
type specDeadAsContention struct{ specBare }

func (s specDeadAsContention) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	if ctx.Err() != nil {
		return lock.ErrNotAcquired
	}
	return s.m.Acquire(context.WithoutCancel(ctx), r, tok, ttl)
}

func specFactory(kind string) func(t *testing.T) lock.Store {
	return func(t *testing.T) lock.Store {
		m := memory.New()
		switch kind {
		case "bare":
			return specBare{m}
		case "broken":
			return specIgnoresToken{specBare{m}}
		case "deadcontention":
			return specDeadAsContention{specBare{m}}
		}
		return m
	}
}

// TestSpecHelper is the subprocess's entry: it runs the kit on the store
// named by the environment, and does nothing in a normal run.
func TestSpecHelper(t *testing.T) {
	kind := os.Getenv(specHelperEnv)
	if kind == "" {
		t.Skip("helper for TestSpecConformance* subprocesses")
	}
	conformance.TestStore(t, specFactory(kind), &conformance.Options{Synctest: true})
}

func specRunHelper(t *testing.T, kind string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSpecHelper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), specHelperEnv+"="+kind)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestSpecConformanceMemoryPasses(t *testing.T) {
	conformance.TestStore(t, specFactory("memory"), &conformance.Options{Synctest: true})
}

func TestSpecConformanceBareStorePasses(t *testing.T) {
	// A correct store with no optional capability passes: rules needing one skip.
	conformance.TestStore(t, specFactory("bare"), &conformance.Options{Synctest: true})
}

func TestSpecConformanceSkipsNamingCapability(t *testing.T) {
	out, err := specRunHelper(t, "bare")
	if err != nil {
		t.Fatalf("kit on a correct three-method store: %v; want success\n%s", err, specTail(out))
	}
	for _, want := range []string{
		"store does not implement lock.Permitter",
		"=== RUN   TestSpecHelper/ReleaseWrongToken",
		"--- PASS: TestSpecHelper/ReleaseWrongToken",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kit output on a three-method store lacks %q", want)
		}
	}
}

func TestSpecConformanceReportsBrokenRuleByName(t *testing.T) {
	out, err := specRunHelper(t, "broken")
	if err == nil {
		t.Fatalf("kit on a store whose Release ignores the token succeeded; want it to fail\n%s", specTail(out))
	}
	for _, want := range []string{
		"--- FAIL: TestSpecHelper/ReleaseWrongToken",
		"Release(r, wrongToken) = nil; want ErrNotHeld",
		"rule ReleaseWrongToken (conformance/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kit output on a store whose Release ignores the token lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", specTail(out))
	}
	// The rules the store keeps still pass.
	if !strings.Contains(out, "--- PASS: TestSpecHelper/") {
		t.Errorf("kit output on the broken store shows no passing rule; want the unaffected rules to pass")
	}
}

func TestSpecConformanceReportsDeadContextAsContention(t *testing.T) {
	out, err := specRunHelper(t, "deadcontention")
	if err == nil {
		t.Fatalf("kit on a store reporting a canceled context as contention succeeded; want it to fail\n%s", specTail(out))
	}
	if !strings.Contains(out, "--- FAIL: TestSpecHelper/CanceledContext") || !strings.Contains(out, "rule CanceledContext (conformance/") {
		t.Errorf("kit output lacks a failure of rule CanceledContext\n%s", specTail(out))
	}
	if strings.Contains(out, "--- FAIL: TestSpecHelper/ReleaseWrongToken") {
		t.Errorf("kit reports ReleaseWrongToken broken on a store whose Release is correct")
	}
}

func specTail(s string) string {
	if len(s) > 6000 {
		return "…" + s[len(s)-6000:]
	}
	return s
}
