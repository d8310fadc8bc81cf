package faultkit_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/faultkit"
)

// fields parses a report line into its key=value fields.
func fields(t *testing.T, line string) map[string]string {
	t.Helper()
	parts := strings.Fields(line)
	if len(parts) == 0 || parts[0] != "faultsuite" {
		t.Fatalf("line %q does not begin with faultsuite", line)
	}
	m := make(map[string]string)
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			t.Fatalf("field %q of %q is not key=value", p, line)
		}
		m[k] = v
	}
	return m
}

func TestReportLine(t *testing.T) {
	rep := faultkit.Report{
		Scenario: "kill-master", Backend: "redis", Acquisitions: 120, Unknown: 3,
		Violations: 2, MaxHolders: 2, MaxOverlap: 1500 * time.Microsecond,
		LostUpdates: 1, StaleAccepted: 0, FencedRejected: 4, FencedWrites: 200,
		P50: 2 * time.Millisecond, P99: 40 * time.Millisecond,
		FaultSuccess: 0.25, HadFault: true, Recovered: true, Recovery: 350 * time.Millisecond,
		Residue: 0, LeakedGoroutines: faultkit.NotChecked,
	}
	line := rep.Line()
	if strings.ContainsAny(line, "\n\r") {
		t.Fatalf("line %q spans lines", line)
	}
	got := fields(t, line)
	for k, v := range map[string]string{
		"scenario": "kill-master", "backend": "redis", "acquisitions": "120", "unknown": "3",
		"violations": "2", "max_holders": "2", "max_overlap_ms": "1.500", "lost_updates": "1",
		"stale_accepted": "0", "fenced_rejected": "4", "fenced_writes": "200",
		"validity_violations": "0", "validity_checked": "0",
		"p50_ms": "2.000", "p99_ms": "40.000", "fault_success": "0.250", "recovery_ms": "350.000",
		"residue": "0", "leaked_goroutines": "-",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (line %q)", k, got[k], v, line)
		}
	}
	if want := "2 mutual-exclusion violations, 1 lost updates"; rep.Unsafe() != want {
		t.Errorf("Unsafe() = %q, want %q", rep.Unsafe(), want)
	}

	// Not applicable, not measured, never recovered, awkward names.
	rep = faultkit.Report{Scenario: "has space", FaultSuccess: math.NaN(), HadFault: true, Residue: -1, LeakedGoroutines: 0}
	line = rep.Line()
	if !strings.Contains(line, `scenario="has space"`) {
		t.Errorf("a scenario name with a space is not quoted: %q", line)
	}
	line = strings.Replace(line, `"has space"`, "x", 1)
	got = fields(t, line)
	for k, v := range map[string]string{"backend": "-", "p50_ms": "-", "fault_success": "-", "recovery_ms": "never", "residue": "-"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (line %q)", k, got[k], v, line)
		}
	}
	if rep.Unsafe() != "" {
		t.Errorf("Unsafe() = %q for a safe report", rep.Unsafe())
	}
}

func TestReportEmitAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.txt")
	t.Setenv(faultkit.ReportEnv, path)
	a := faultkit.Report{Scenario: "a", FaultSuccess: math.NaN()}
	b := faultkit.Report{Scenario: "b", FaultSuccess: math.NaN()}
	a.Emit(t)
	b.Emit(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := a.Line() + "\n" + b.Line() + "\n"; string(data) != want {
		t.Errorf("report file = %q, want %q", data, want)
	}
}

// Positive control of the leak check: a goroutine blocked forever is
// reported, with its stack; once it ends, nothing is.
func TestLeaked(t *testing.T) {
	base := faultkit.Goroutines()
	release := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		<-release
	}()
	leaked := base.Leaked(50 * time.Millisecond)
	if len(leaked) != 1 || !strings.Contains(leaked[0], "TestLeaked") {
		t.Errorf("Leaked = %q, want the blocked goroutine", leaked)
	}
	if got := base.Leaked(0, "TestLeaked"); len(got) != 0 {
		t.Errorf("Leaked with an ignore string matching it = %q, want none", got)
	}
	close(release)
	<-exited
	if got := base.Leaked(5 * time.Second); len(got) != 0 {
		t.Errorf("Leaked after the goroutine ended = %q", got)
	}
	// Goroutines that end late are waited for.
	done := make(chan struct{})
	go func() { time.Sleep(20 * time.Millisecond); close(done) }()
	if got := base.Leaked(5 * time.Second); len(got) != 0 {
		t.Errorf("Leaked did not wait for a goroutine ending after 20ms: %q", got)
	}
	<-done
}

func TestResidue(t *testing.T) {
	ctx := context.Background()
	left := 3
	n, err := faultkit.Residue(ctx, 5*time.Second, func(context.Context) (int, error) {
		left--
		return left, nil
	})
	if n != 0 || err != nil || left != 0 {
		t.Errorf("Residue = %d, %v after %d polls; want 0 once the keys expired", n, err, 3-left)
	}
	n, err = faultkit.Residue(ctx, 30*time.Millisecond, func(context.Context) (int, error) { return 2, nil })
	if n != 2 || err != nil {
		t.Errorf("Residue = %d, %v; want the 2 keys that never expire", n, err)
	}
	boom := errors.New("server down")
	if _, err := faultkit.Residue(ctx, 0, func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Errorf("Residue error = %v, want the counter's", err)
	}
}

func TestReportExtra(t *testing.T) {
	rep := faultkit.Report{Scenario: "storm", FaultSuccess: math.NaN()}
	rep.Add("cmds_per_waiter_s", "3.5")
	rep.AddMillis("cancel_p99_ms", 1500*time.Microsecond)
	got := fields(t, rep.Line())
	if got["cmds_per_waiter_s"] != "3.5" || got["cancel_p99_ms"] != "1.500" {
		t.Errorf("extra fields missing from %q", rep.Line())
	}
	if !strings.HasSuffix(rep.Line(), "cmds_per_waiter_s=3.5 cancel_p99_ms=1.500") {
		t.Errorf("extra fields not at the end, in order: %q", rep.Line())
	}
}

// Grown counts goroutines by signature: a goroutine replaced by another
// of the same kind is not a leak; one more of a kind is.
func TestGrown(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	park := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-stop
		}()
	}
	park()
	base := faultkit.Goroutines()
	// Replace the parked goroutine by another of the same kind.
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	park()
	if got := base.Grown(0); len(got) != 0 {
		t.Errorf("Grown after a replacement = %q, want none", got)
	}
	if got := base.Leaked(0); len(got) != 1 {
		t.Errorf("Leaked after a replacement = %d goroutines, want the new one", len(got))
	}
	park()
	if got := base.Grown(50 * time.Millisecond); len(got) != 1 || !strings.Contains(got[0], "TestGrown") {
		t.Errorf("Grown with one more parked goroutine = %q, want it", got)
	}
	close(stop)
	wg.Wait()
	if got := base.Grown(5 * time.Second); len(got) != 0 {
		t.Errorf("Grown after every goroutine ended = %q", got)
	}
}
