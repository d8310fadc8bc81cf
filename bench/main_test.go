package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestQuick runs every section of the harness once, briefly (-quick), on
// servers it starts itself: a smoke test that the harness and every
// adapter still work, not a measurement. It skips when redis-server or
// memcached is missing, unless servers are required (CI).
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and runs for about 15s")
	}
	for _, bin := range []string{"redis-server", "memcached"} {
		if _, err := exec.LookPath(bin); err != nil {
			if required() {
				t.Fatalf("%s not found and servers are required: %v", bin, err)
			}
			t.Skipf("%s not found: %v", bin, err)
		}
	}
	*quick = true
	var out bytes.Buffer
	start := time.Now()
	res, err := run(plan{passes: 1, fewer: 1, throughput: 100 * time.Millisecond, contended: 200 * time.Millisecond, ttl: 10 * time.Second}, &out)
	if err != nil {
		t.Fatal(err)
	}
	// lockkit leaves no lock behind, in any cell.
	for section, cells := range res.Throughput {
		for _, c := range cells {
			if strings.HasPrefix(c.Library, "lockkit") && c.Leftover != 0 {
				t.Errorf("%s, %s: %d lock keys left", section, c.Library, c.Leftover)
			}
		}
	}
	for _, c := range res.Contention {
		if strings.HasPrefix(c.Library, "lockkit") && c.Leftover != 0 {
			t.Errorf("contention, %s: %d lock keys left", c.Library, c.Leftover)
		}
	}
	t.Logf("took %v", time.Since(start))
	report := out.String()
	for _, want := range []string{"Single Redis", "Redlock over 5 masters", "memcached", "Contention", "In memory", "Targets"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks a %q section:\n%s", want, report)
		}
	}
	// Every lockkit cell ran without errors. (Other libraries' errors are
	// reported, not failed on: the smoke test runs them very briefly, and
	// under the race detector their own timeouts can fire.)
	for _, line := range strings.Split(report, "\n") {
		if strings.Contains(line, "first error") {
			if strings.HasPrefix(line, "- lockkit") {
				t.Errorf("a lockkit cell failed: %s", line)
			} else {
				t.Logf("%s", line)
			}
		}
	}
	if strings.Contains(report, "violations") && !strings.Contains(report, "no mutual-exclusion violation, no lost update | 0 |") {
		t.Errorf("mutual exclusion violated or updates lost:\n%s", report)
	}
}
