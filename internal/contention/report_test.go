package contention_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/contention"
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
	rep := contention.Report{
		Scenario: "kill-master", Backend: "redis", Acquisitions: 120, Unknown: 3,
		Violations: 2, MaxHolders: 2, MaxOverlap: 1500 * time.Microsecond,
		LostUpdates: 1, StaleAccepted: 0, FencedRejected: 4, FencedWrites: 200,
		P50: 2 * time.Millisecond, P99: 40 * time.Millisecond,
		FaultSuccess: 0.25, HadFault: true, Recovered: true, Recovery: 350 * time.Millisecond,
		Residue: 0, LeakedGoroutines: contention.NotChecked,
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
	rep = contention.Report{Scenario: "has space", FaultSuccess: math.NaN(), HadFault: true, Residue: -1, LeakedGoroutines: 0}
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

func TestReportExtra(t *testing.T) {
	rep := contention.Report{Scenario: "storm", FaultSuccess: math.NaN()}
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
