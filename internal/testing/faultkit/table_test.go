package faultkit_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
)

func TestParseLine(t *testing.T) {
	rep := contention.Report{Scenario: "has space", Backend: "redis", Acquisitions: 3, FaultSuccess: math.NaN(), P50: time.Millisecond}
	rep.Add("rounds", "10")
	keys, fields, ok := faultkit.ParseLine(rep.Line())
	if !ok {
		t.Fatalf("ParseLine(%q) failed", rep.Line())
	}
	if fields["scenario"] != "has space" || fields["acquisitions"] != "3" || fields["rounds"] != "10" {
		t.Errorf("fields = %v", fields)
	}
	if keys[0] != "scenario" || keys[len(keys)-1] != "rounds" {
		t.Errorf("keys = %v; want the line's order", keys)
	}
	for _, bad := range []string{"", "=== RUN TestX", "faultsuite scenario", `faultsuite a="unterminated`} {
		if _, _, ok := faultkit.ParseLine(bad); ok {
			t.Errorf("ParseLine(%q) succeeded; want false", bad)
		}
	}
}

func TestTable(t *testing.T) {
	line := func(scenario, backend string, acq int) string {
		rep := contention.Report{Scenario: scenario, Backend: backend, Acquisitions: acq, FaultSuccess: math.NaN()}
		rep.Add("rounds", "1")
		return rep.Line()
	}
	in := strings.Join([]string{
		"=== RUN   TestSomething",
		"    x_test.go:1: " + line("a", "redis", 1),
		line("b", "memcache", 2),
		line("a", "redis", 3), // the last line of a scenario wins, in first-seen order
	}, "\n")
	var out strings.Builder
	if err := faultkit.Table(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(rows) != 4 {
		t.Fatalf("table has %d lines; want a heading, a rule and 2 rows:\n%s", len(rows), out.String())
	}
	if !strings.HasPrefix(rows[2], "| a | redis | 3 |") || !strings.HasPrefix(rows[3], "| b | memcache | 2 |") {
		t.Errorf("rows = %q", rows[2:])
	}
	if !strings.HasSuffix(rows[2], "| rounds=1 |") {
		t.Errorf("scenario-specific fields not in the last column: %q", rows[2])
	}
}
