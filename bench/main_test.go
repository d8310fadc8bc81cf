package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestQuick runs every section of the harness once, very briefly, on
// servers it starts itself: a smoke test that the harness and every
// adapter still work, not a measurement. It checks that every row of
// every table is there and measured something, that lockkit's cells ran
// without errors and left no lock behind, and that every target was
// measured. It skips when redis-server or memcached is missing, and
// leaves out PostgreSQL and etcd when theirs are, unless servers are
// required (LOCKKIT_REQUIRE_SERVERS=1, CI).
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and runs for about half a minute")
	}
	for _, bin := range []string{"redis-server", "memcached"} {
		if _, err := exec.LookPath(bin); err != nil {
			if required() {
				t.Fatalf("%s not found and servers are required: %v", bin, err)
			}
			t.Skipf("%s not found: %v", bin, err)
		}
	}
	var out bytes.Buffer
	start := time.Now()
	// A generous store timeout: the race detector and a loaded machine
	// slow a Redlock call past the default 50ms now and then.
	res, err := run(plan{passes: 1, throughput: 50 * time.Millisecond, contended: 100 * time.Millisecond, ttl: 10 * time.Second,
		quick: true, storeTimeout: 5 * time.Second}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("took %v", time.Since(start))

	want := map[string][]library{
		"redis":                redisLibraries(),
		"redlock":              redlockLibraries(),
		"redlock-1":            redlockLibraries(),
		"memcached":            memcachedLibraries(),
		"memory":               memoryLibraries(),
		"contention":           redisContentionLibraries(),
		"contention-64":        redis64Libraries(),
		"memcached-contention": memcachedContentionLibraries(),
		"postgres":             postgresLibraries(),
		"etcd":                 etcdLibraries(),
		"etcd-1":               etcdLibraries(),
		"etcd-contention":      etcdLibraries(),
		"permits":              permitLibraries(permitLimit, false),
		"permits-busy":         permitLibraries(permitLimit, true),
		"permits-contention":   permitContentionLibraries(),
	}
	skipped := strings.Join(res.Skipped, "\n")
	for key, libs := range want {
		sec := res.section(key)
		if sec == nil {
			if server, _, _ := strings.Cut(key, "-"); (server == "postgres" || server == "etcd") && strings.Contains(skipped, server+":") {
				t.Logf("section %s skipped: its server is missing", key)
				continue
			}
			t.Errorf("section %s missing from the results", key)
			continue
		}
		for _, lib := range libs {
			if sec.Kind == kindContention {
				checkContentionRows(t, sec, lib.name)
			} else {
				checkThroughputRows(t, sec, lib.name)
			}
		}
	}

	report := out.String()
	for _, sec := range res.Sections {
		if !strings.Contains(report, "### "+sec.Title) {
			t.Errorf("the report lacks the table of section %s", sec.Key)
		}
	}
	issues := map[string]bool{}
	for _, tg := range res.Targets {
		issues[tg.Issue] = true
		if tg.Measured == notMeasured {
			t.Errorf("target of issue %s not measured: %s", tg.Issue, tg.Workload)
		}
	}
	for _, issue := range []string{"13", "14", "13, 14", "—"} {
		if !issues[issue] {
			t.Errorf("no target of issue %s in the targets table", issue)
		}
	}
	if !strings.Contains(report, "### Targets, this run") {
		t.Errorf("the report lacks the targets table")
	}
	if t.Failed() {
		t.Logf("the report:\n%s", report)
	}
}

// checkThroughputRows checks the rows of lib in an uncontended section
// (fresh and reused names, or those the section runs): pairs done, and
// for lockkit no error and no lock left behind.
func checkThroughputRows(t *testing.T, sec *sectionResult, lib string) {
	t.Helper()
	rows := []string{fresh, reused}
	if sec.Key == "permits-busy" {
		rows = []string{reused} // the permits of a name are taken once per name
	}
	for _, names := range rows {
		cs := cellsOf(sec, lib, names)
		if len(cs) == 0 {
			t.Errorf("%s: no row for %s with %s names", sec.Key, lib, names)
		}
		for _, c := range cs {
			if c.Pairs == 0 || c.PairsPerSec <= 0 {
				t.Errorf("%s, %s, %s names: %d pairs (%.0f/s); first error: %s", sec.Key, lib, names, c.Pairs, c.PairsPerSec, c.FirstError)
			}
			if sec.Kind == kindLatency && c.P50 <= 0 {
				t.Errorf("%s, %s, %s names: p50 latency %v µs", sec.Key, lib, names, c.P50)
			}
			if !strings.HasPrefix(lib, "lockkit") {
				continue
			}
			if c.Errors != 0 {
				t.Errorf("%s, %s, %s names: %d errors, the first: %s", sec.Key, lib, names, c.Errors, c.FirstError)
			}
			if c.Left.Locks != 0 || c.Left.Err != "" {
				t.Errorf("%s, %s, %s names: leftovers %v; want no lock left", sec.Key, lib, names, c.Left)
			}
		}
	}
}

// checkContentionRows checks lib's rows in a contention section:
// acquisitions at every pause, mutual exclusion, and for lockkit no error
// and no lock left behind (unless a Lock was cut short by the deadline
// after the cell).
func checkContentionRows(t *testing.T, sec *sectionResult, lib string) {
	t.Helper()
	for _, pause := range sec.Pauses {
		cs := contentionOf(sec, lib, pause)
		if len(cs) == 0 {
			t.Errorf("%s: no row for %s at pause %v", sec.Key, lib, pause)
		}
		for _, c := range cs {
			if c.Acquisitions == 0 || c.PerSec <= 0 {
				t.Errorf("%s, %s, pause %v: %d acquisitions (%.0f/s); first error: %s", sec.Key, lib, pause, c.Acquisitions, c.PerSec, c.FirstError)
			}
			if c.Violations != 0 || c.LostUpdates != 0 {
				t.Errorf("%s, %s, pause %v: %d mutual-exclusion violations, %d lost updates", sec.Key, lib, pause, c.Violations, c.LostUpdates)
			}
			if !strings.HasPrefix(lib, "lockkit") {
				continue
			}
			if c.Errors != 0 {
				t.Errorf("%s, %s, pause %v: %d errors, the first: %s", sec.Key, lib, pause, c.Errors, c.FirstError)
			}
			if c.CutShort == 0 && (c.Left.Locks != 0 || c.Left.Err != "") {
				t.Errorf("%s, %s, pause %v: leftovers %v; want no lock left", sec.Key, lib, pause, c.Left)
			}
		}
	}
}

// Over as many passes as there are libraries, each runs once in every
// position: none always first, last or in the middle.
func TestInPassOrder(t *testing.T) {
	libs := []string{"floor", "fenced", "nofence"}
	seen := map[string]map[int]bool{}
	for pass := range len(libs) {
		for i, l := range inPassOrder(libs, pass) {
			if seen[l] == nil {
				seen[l] = map[int]bool{}
			}
			seen[l][i] = true
		}
	}
	for _, l := range libs {
		if len(seen[l]) != len(libs) {
			t.Errorf("%s ran in positions %v over %d passes; want each of 0..%d once", l, seen[l], len(libs), len(libs)-1)
		}
	}
}

// A contention section in which no poller served every worker (a short
// or starved run) has nothing to compare lockkit with: the two targets
// against the best poller say so, rather than that a row is missing.
func TestTargetsWithoutServingPoller(t *testing.T) {
	cell := func(lib string, served int) contentionCell {
		return contentionCell{Library: lib, Pass: 1, contentionResult: contentionResult{Acquisitions: 300, PerSec: 100, WaitP99: 10, Served: served, Workers: 16}}
	}
	r := &results{Sections: []*sectionResult{{
		Key: "contention", Kind: kindContention, Pollers: []string{"poller"},
		Contention: []contentionCell{cell("lockkit", 16), cell("poller", 15)},
	}}}
	var against []target
	for _, tg := range checkTargets(r) {
		if strings.Contains(tg.Workload, "best poller") || strings.Contains(tg.Workload, "the same poller") {
			against = append(against, tg)
		}
	}
	if len(against) != 2 {
		t.Fatalf("%d targets against the best poller; want 2: %+v", len(against), against)
	}
	for _, tg := range against {
		if tg.Measured == notMeasured || tg.Met || !strings.Contains(tg.Measured, "no poller served every worker") {
			t.Errorf("target %q with no poller serving every worker: measured %q, met %v; want it said, and not met", tg.Workload, tg.Measured, tg.Met)
		}
	}
	// With a poller that served every worker, they are measured.
	r.Sections[0].Contention[1].Served = 16
	for _, tg := range checkTargets(r) {
		if strings.Contains(tg.Workload, "best poller") && tg.Measured != "1.00×" {
			t.Errorf("target %q = %q; want 1.00×", tg.Workload, tg.Measured)
		}
	}
}
