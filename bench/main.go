// Command bench compares lockkit with other Go lock libraries and with
// hand-written floors, on servers it starts itself on loopback, and prints
// Markdown tables with each library's ratio to the floor of the same run,
// and a table of the targets of the open issues, met or not.
//
// Run it from this directory (it is a module of its own, so that the
// libraries it compares never enter lockkit's dependencies):
//
//	cd bench && go run .
//
// It needs redis-server (7 or later) and memcached on the PATH; the
// PostgreSQL and etcd sections need their servers and are skipped
// without them. Every cell runs -passes times (3), each time with the
// libraries' order turned by one place; uncontended cells
// lock a fresh name per lock and, in a second row, one name per goroutine
// again and again. Within a pass, the uncontended cells of one names row
// open their clients together and take turns in -slices slices (5), so
// that a change of the machine's speed during the pass (this is a shared
// VM) falls on every library of the row alike; each client stays open
// from its first slice to its last. -json FILE also writes every number as JSON; -quick
// runs every cell once, briefly, and contention at one pause only (a
// smoke test, not a measurement, in about half a minute); -only
// runs some sections (redis, redlock, memcached, postgres, memory,
// contention, permits, etcd, or a section's key); -libs selects libraries. A full
// run takes about ten minutes on two cores.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

var (
	jsonOut   = flag.String("json", "", "also write the results as JSON to this file")
	quick     = flag.Bool("quick", false, "run every cell once and briefly, contention at one pause: a smoke test, not a measurement")
	only      = flag.String("only", "", "run only these comma-separated sections: redis, redlock, memcached, postgres, memory, contention, permits, etcd, or a section's key")
	libs      = flag.String("libs", "", "run only the libraries whose name contains one of these comma-separated words (floors always run)")
	cpuProf   = flag.String("cpuprofile", "", "write a CPU profile of the harness process to this file")
	passes    = flag.Int("passes", 3, "how many times each cell runs, turning the order of the libraries by one place each time")
	slicesN   = flag.Int("slices", 5, "how many slices an uncontended cell runs in, taking turns with the other cells of its pass and names row, its client kept open")
	cellTime  = flag.Duration("time", 750*time.Millisecond, "how long an uncontended cell runs")
	contended = flag.Duration("contended", 3*time.Second, "how long a contention cell runs")
)

// plan is what a run measures, and how long and how often.
type plan struct {
	passes       int
	slices       int           // an uncontended cell runs in this many slices, taking turns with the other cells of its pass and names row
	throughput   time.Duration // an uncontended cell
	contended    time.Duration // a contention cell
	ttl          time.Duration
	only         []string      // sections or groups to run; none: all
	libs         []string      // words selecting libraries; none: all
	quick        bool          // a smoke test: contention at one pause only
	storeTimeout time.Duration // lockkit's Options.StoreTimeout; 0 keeps the default (the smoke test raises it: the race detector is slow)
}

func main() {
	flag.Parse()
	p := plan{passes: max(1, *passes), slices: max(1, *slicesN), throughput: *cellTime, contended: *contended, ttl: 10 * time.Second, quick: *quick}
	if *quick {
		p.passes, p.slices, p.throughput, p.contended = 1, 1, 150*time.Millisecond, 300*time.Millisecond
	}
	p.only, p.libs = words(*only), words(*libs)
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := run(p, os.Stdout)
	if err == nil && *jsonOut != "" {
		var b []byte
		if b, err = json.MarshalIndent(res, "", "  "); err == nil {
			err = os.WriteFile(*jsonOut, b, 0o644)
		}
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func words(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// required reports whether missing servers must fail the run, as in CI.
func required() bool {
	for _, v := range []string{os.Getenv("LOCKKIT_REQUIRE_SERVERS"), os.Getenv("CI")} {
		if v != "" && v != "0" && v != "false" {
			return true
		}
	}
	return false
}

// results is everything a run measured.
type results struct {
	Machine  machine          `json:"machine"`
	Plan     string           `json:"plan"`
	Sections []*sectionResult `json:"sections"`
	Skipped  []string         `json:"skipped,omitempty"` // sections skipped for want of their server, and why
	Targets  []target         `json:"targets"`
}

// section returns the section of key, or nil if it did not run.
func (r *results) section(key string) *sectionResult {
	for _, s := range r.Sections {
		if s.Key == key {
			return s
		}
	}
	return nil
}

// kind is the workload of a section, and so the shape of its table.
type kind string

const (
	kindThroughput kind = "throughput" // goroutines on names of their own: pairs/s
	kindLatency    kind = "latency"    // one goroutine: the latency of a pair
	kindOneCore    kind = "one core"   // one goroutine, GOMAXPROCS 1: ns per pair
	kindContention kind = "contention" // workers on one name
)

// sectionResult is one table of the report.
type sectionResult struct {
	Key        string           `json:"key"`
	Title      string           `json:"title"`
	Kind       kind             `json:"kind"`
	Libraries  []string         `json:"libraries"` // in the order of the table
	Floor      string           `json:"floor,omitempty"`
	Pollers    []string         `json:"pollers,omitempty"` // the libraries that wait by polling
	Throughput []cellResult     `json:"throughput,omitempty"`
	Contention []contentionCell `json:"contention,omitempty"`
	Pauses     []time.Duration  `json:"pausesNanos,omitempty"`
}

type cellResult struct {
	Library string `json:"library"`
	Names   string `json:"names"` // fresh or reused
	Pass    int    `json:"pass"`
	throughputResult
	Ratio float64 `json:"ratioToFloor"` // pairs/s (latency, one core: the floor's time over ours) against the floor of the same pass and names
}

type contentionCell struct {
	Library string        `json:"library"`
	Pause   time.Duration `json:"pauseNanos"`
	Pass    int           `json:"pass"`
	contentionResult
}

const (
	fresh  = "fresh"
	reused = "reused"
)

// spec describes a section to run.
type spec struct {
	key, title string
	kind       kind
	libs       []library
	workers    int
	pauses     []time.Duration // contention
	names      []string        // throughput: fresh, reused or both (nil)
	env        func(env) env   // adds what the section's servers need; nil: nothing
	count      leftoverFunc    // nil: nothing is counted
}

// runner runs the sections of one run.
type runner struct {
	p        plan
	s        *servers
	res      *results
	start    time.Time
	progress func(format string, args ...any)
}

var cellSeq atomic.Int64

// newEnv returns the environment of one cell, with a prefix of its own.
func (r *runner) newEnv(sp spec) env {
	n := cellSeq.Add(1)
	e := env{prefix: fmt.Sprintf("c%d.", n), table: fmt.Sprintf("bench%d", n), ttl: r.p.ttl, storeTimeout: r.p.storeTimeout}
	if r.s != nil {
		for _, p := range r.s.redis {
			e.redis = append(e.redis, p.Addr())
		}
		e.memcached = r.s.memcached.Addr()
	}
	if sp.env != nil {
		e = sp.env(e)
	}
	return e
}

// skip records a section skipped for want of its server: an error when
// servers are required.
func (r *runner) skip(section string, err error) error {
	if required() {
		return err
	}
	r.progress("%s: skipped: %v", section, err)
	r.res.Skipped = append(r.res.Skipped, section+": "+err.Error())
	return nil
}

// want reports whether the section key of group is to run.
func (r *runner) want(group, key string) bool {
	return len(r.p.only) == 0 || slices.Contains(r.p.only, group) || slices.Contains(r.p.only, key)
}

// selected filters libraries by -libs (floors always run).
func (r *runner) selected(ls []library) []library {
	if len(r.p.libs) == 0 {
		return ls
	}
	var out []library
	for _, l := range ls {
		if l.floor || slices.ContainsFunc(r.p.libs, func(w string) bool { return strings.Contains(l.name, w) }) {
			out = append(out, l)
		}
	}
	return out
}

func run(p plan, out io.Writer) (*results, error) {
	p.slices = max(1, p.slices)
	r := &runner{p: p, start: time.Now(), res: &results{}}
	r.progress = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%5.1fs %4dg] ", time.Since(r.start).Seconds(), runtime.NumGoroutine())
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
	s, err := startServers(5)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	r.s = s
	r.res.Machine = describe(s)
	r.res.Plan = fmt.Sprintf("%d runs of every cell; uncontended cells %v, contention cells %v; TTL %v", p.passes, p.throughput, p.contended, p.ttl)
	if p.slices > 1 {
		r.res.Plan += fmt.Sprintf("; each uncontended cell in %d slices of %v, taking turns with the other cells of its run and names row, each cell's client open throughout", p.slices, p.throughput/time.Duration(p.slices))
	}
	redisLeft := leftoverFunc(redisLeftovers)
	ms := time.Millisecond

	if r.want("redis", "redis") {
		r.throughput(spec{key: "redis", title: "Single Redis: 64 goroutines, TryLock+Unlock pairs", kind: kindThroughput,
			libs: redisLibraries(), workers: 64, count: redisLeft})
	}
	if r.want("redlock", "redlock") {
		r.throughput(spec{key: "redlock", title: "Redlock over 5 masters: 64 goroutines, TryLock+Unlock pairs", kind: kindThroughput,
			libs: redlockLibraries(), workers: 64, count: redisLeft})
	}
	if r.want("redlock", "redlock-1") {
		r.throughput(spec{key: "redlock-1", title: "Redlock over 5 masters: 1 goroutine, the latency of a TryLock+Unlock pair", kind: kindLatency,
			libs: redlockLibraries(), workers: 1, count: redisLeft})
	}
	if r.want("memcached", "memcached") {
		r.throughput(spec{key: "memcached", title: "memcached: 64 goroutines, TryLock+Unlock pairs", kind: kindThroughput,
			libs: memcachedLibraries(), workers: 64, count: leftoverFunc(memcachedLeftovers)})
	}
	if r.want("postgres", "postgres") {
		if err := r.postgres(); err != nil {
			return nil, fmt.Errorf("postgres section: %w", err)
		}
	}
	if r.want("memory", "memory") {
		r.throughput(spec{key: "memory", title: "In memory: 1 goroutine on one core (GOMAXPROCS 1), TryLock+Unlock pairs", kind: kindOneCore,
			libs: memoryLibraries(), workers: 1})
	}
	if r.want("contention", "contention") {
		r.contention(spec{key: "contention", title: "Contention on Redis: 16 workers (each its own client) on one name, Lock → update → Unlock → pause",
			libs: redisContentionLibraries(), workers: 16, pauses: []time.Duration{0, ms}, count: redisLeft})
	}
	if r.want("contention", "contention-64") {
		r.contention(spec{key: "contention-64", title: "Contention on Redis: 64 workers (each its own client) on one name, Lock → update → Unlock → pause",
			libs: redis64Libraries(), workers: 64, pauses: []time.Duration{ms}, count: redisLeft})
	}
	if r.want("contention", "memcached-contention") {
		r.contention(spec{key: "memcached-contention", title: "Contention on memcached (no wake-on-release): 16 workers (each its own client) on one name, Lock → update → Unlock → pause",
			libs: memcachedContentionLibraries(), workers: 16, pauses: []time.Duration{0, ms}, count: leftoverFunc(memcachedLeftovers)})
	}
	if r.want("permits", "permits") {
		r.throughput(spec{key: "permits", title: fmt.Sprintf("Permits on single Redis: 64 goroutines, acquire+release of one of %d permits", permitLimit), kind: kindThroughput,
			libs: permitLibraries(permitLimit, false), workers: 64, count: redisLeft})
	}
	if r.want("permits", "permits-busy") {
		r.throughput(spec{key: "permits-busy", title: fmt.Sprintf("Permits on single Redis: 64 goroutines, acquire+release of the one free permit of %d (the others held)", permitLimit), kind: kindThroughput,
			libs: permitLibraries(permitLimit, true), workers: 64, names: []string{reused}, count: redisLeft})
	}
	if r.want("permits", "permits-contention") {
		r.contention(spec{key: "permits-contention", title: fmt.Sprintf("Permits on Redis: 16 workers (each its own client) on one name, %d permits, acquire → release → pause", contendedPermitLimit),
			libs: permitContentionLibraries(), workers: 16, pauses: []time.Duration{0, ms}, count: redisLeft})
	}
	if r.want("etcd", "etcd") || r.want("etcd", "etcd-1") || r.want("etcd", "etcd-contention") {
		if err := r.etcd(); err != nil {
			return nil, fmt.Errorf("etcd section: %w", err)
		}
	}

	r.res.Machine.LoadEnd = loadAvg()
	r.res.Targets = checkTargets(r.res)
	report(out, r.res, time.Since(r.start))
	return r.res, nil
}

// throughput runs the cells of an uncontended section: every library with
// fresh names and with reused names, passes times, in an order turned by
// one place each pass.
func (r *runner) throughput(sp spec) *sectionResult {
	libs := r.selected(sp.libs)
	sec := &sectionResult{Key: sp.key, Title: sp.title, Kind: sp.kind, Libraries: names(libs)}
	var items []item
	for _, l := range libs {
		if l.floor {
			sec.Floor = l.name
		}
		rows := sp.names
		if rows == nil {
			rows = []string{fresh, reused}
		}
		for _, n := range rows {
			items = append(items, item{l, n})
		}
	}
	workers := sp.workers
	if sp.kind == kindOneCore {
		workers = 1
	}
	for pass := range r.p.passes {
		// The cells of one names row run together: each opens its client
		// once, then they take turns, a slice each, slices times over, so
		// that a change of the machine's speed during the pass falls on
		// all of them alike.
		for _, row := range []string{fresh, reused} {
			group := rowInPassOrder(items, row, pass)
			if len(group) == 0 {
				continue
			}
			envs := make([]env, len(group))
			cells := make([]*cell, len(group))
			for i, it := range group {
				envs[i] = r.newEnv(sp)
				cells[i] = openCell(it.lib, envs[i], workers, it.names == fresh, sp.kind == kindLatency)
				if r.p.slices > 1 {
					r.runSlice(sp, cells[i], rampUp) // off the record: a client's first moments are slow
					cells[i].discard()
				}
			}
			idx := make([]int, len(group))
			for i := range idx {
				idx[i] = i
			}
			for slice := range r.p.slices {
				for _, i := range inPassOrder(idx, slice) {
					r.runSlice(sp, cells[i], r.p.throughput/time.Duration(r.p.slices))
				}
			}
			results := make([]throughputResult, len(group))
			for i := range group {
				results[i] = cells[i].close()
			}
			if sp.count != nil {
				libs := make([]library, len(group))
				for i, it := range group {
					libs[i] = it.lib
				}
				for i, l := range r.leftovers(sp, row == fresh, envs, libs) {
					results[i].Left = l
				}
			}
			for i, it := range group {
				c := results[i]
				r.progress("%s, pass %d: %-34s %-6s %9.0f pairs/s  p50 %5.0fµs  %5.1f allocs/pair  fenced %-3s  errors %d  left %v %s",
					sp.key, pass+1, it.lib.name, it.names, c.PairsPerSec, c.P50, c.AllocsPerPair, c.Fenced, c.Errors, c.Left, c.FirstError)
				sec.Throughput = append(sec.Throughput, cellResult{Library: it.lib.name, Names: it.names, Pass: pass + 1, throughputResult: c})
			}
		}
	}
	setRatios(sec)
	r.res.Sections = append(r.res.Sections, sec)
	return sec
}

// item is a cell of an uncontended section: a library, with fresh or
// reused names.
type item struct {
	lib   library
	names string
}

// rowInPassOrder returns the items of a names row in the order of a pass:
// the row's own turned by pass places, so that every cell takes a new
// place each pass (turning the items of both rows together moved a row's
// cells only every other pass).
func rowInPassOrder(items []item, row string, pass int) []item {
	return inPassOrder(filter(items, func(it item) bool { return it.names == row }), pass)
}

// rampUp is how long a cell that runs in slices runs before its first,
// off the record.
const rampUp = 50 * time.Millisecond

// runSlice runs one slice of c, on one core in a one-core section.
func (r *runner) runSlice(sp spec, c *cell, d time.Duration) {
	if sp.kind == kindOneCore {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	c.run(d)
}

// leftovers counts what the cells of envs, run by libs, left on the
// servers they shared: each cell's lock keys and per-resource state (keys
// holding its own prefix; the other cells' are theirs); and then, since
// state kept once per server cannot be told apart between cells that
// shared the servers, what a short run of each library alone leaves (as
// every cell ran when cells were not sliced): its server-wide keys, and
// any lock key or per-resource key it leaves too. The servers are emptied
// once the shared cells are counted, and after each run alone.
func (r *runner) leftovers(sp spec, freshNames bool, envs []env, libs []library) []leftovers {
	out := make([]leftovers, len(envs))
	for i := range envs {
		e := envs[i]
		for j, o := range envs {
			if j != i {
				e.shared = append(e.shared, o.prefix)
			}
		}
		e.keep = i < len(envs)-1
		out[i] = sp.count(e)
		if len(envs) > 1 {
			out[i].ServerWide = 0 // not the cell's alone: see below
		}
	}
	if len(envs) == 1 {
		return out
	}
	for i, lib := range libs {
		alone := throughput(lib, r.newEnv(sp), sp.workers, aloneTime, freshNames, false, sp.count).Left
		out[i].Locks += alone.Locks
		out[i].PerResource += alone.PerResource
		out[i].ServerWide = alone.ServerWide
		if out[i].Err == "" {
			out[i].Err = alone.Err
		}
	}
	return out
}

// aloneTime is how long a library runs alone after a sliced group, to
// count the keys it keeps once per server.
const aloneTime = 100 * time.Millisecond

// contention runs the cells of a contention section: every library at
// every pause, passes times.
func (r *runner) contention(sp spec) *sectionResult {
	libs := r.selected(sp.libs)
	pauses := sp.pauses
	if r.p.quick {
		pauses = pauses[:1]
	}
	sec := &sectionResult{Key: sp.key, Title: sp.title, Kind: kindContention, Libraries: names(libs), Pauses: pauses}
	for _, l := range libs {
		if l.poller {
			sec.Pollers = append(sec.Pollers, l.name)
		}
	}
	for _, pause := range pauses {
		for pass := range r.p.passes {
			for _, lib := range inPassOrder(libs, pass) {
				c := contend(lib, r.newEnv(sp), sp.workers, pause, r.p.contended, sp.count)
				r.progress("%s, pause %v, pass %d: %-34s %6.0f acq/s  acq/handoff %5.2f  wait p99 %6.1fms  max %6.1fms  passed over %4d  served %d/%d  violations %d  lost %d  errors %d  still waiting %d  left %v %s",
					sp.key, pause, pass+1, lib.name, c.PerSec, c.AcqPerHandoff, c.WaitP99, c.WaitMax, c.PassedOverMax, c.Served, c.Workers,
					c.Violations, c.LostUpdates, c.Errors, c.CutShort, c.Left, c.FirstError)
				sec.Contention = append(sec.Contention, contentionCell{Library: lib.name, Pause: pause, Pass: pass + 1, contentionResult: c})
			}
		}
	}
	r.res.Sections = append(r.res.Sections, sec)
	return sec
}

// warmUp runs the first library of sp, off the record: a server just
// started is slow for its first second or so, and the library measured
// first would pay for it.
func (r *runner) warmUp(sp spec) {
	d := time.Second
	if r.p.quick {
		d = r.p.throughput
	}
	r.progress("%s: warming the server up with %s for %v", sp.key, sp.libs[0].name, d)
	throughput(sp.libs[0], r.newEnv(sp), sp.workers, d, true, false, sp.count)
}

// inPassOrder returns xs in the order of a pass: turned by pass places,
// so that over len(xs) passes each runs once in every position (reversing
// every other pass would leave the middle one always in the middle).
func inPassOrder[T any](xs []T, pass int) []T {
	if len(xs) == 0 {
		return nil
	}
	k := pass % len(xs)
	return append(slices.Clone(xs[k:]), xs[:k]...)
}

func names(libs []library) []string {
	var out []string
	for _, l := range libs {
		out = append(out, l.name)
	}
	return out
}

// setRatios sets each cell's ratio to the floor of the same pass and
// names: pairs/s over the floor's; for latency and one-core cells, the
// floor's time over ours, so that > 1 is better there too.
func setRatios(sec *sectionResult) {
	type at struct {
		pass  int
		names string
	}
	floor := map[at]cellResult{}
	for _, c := range sec.Throughput {
		if c.Library == sec.Floor {
			floor[at{c.Pass, c.Names}] = c
		}
	}
	for i, c := range sec.Throughput {
		f, ok := floor[at{c.Pass, c.Names}]
		switch {
		case !ok:
		case sec.Kind == kindLatency && c.P50 > 0:
			sec.Throughput[i].Ratio = f.P50 / c.P50
		case sec.Kind != kindLatency && f.PairsPerSec > 0:
			sec.Throughput[i].Ratio = c.PairsPerSec / f.PairsPerSec
		}
	}
}
