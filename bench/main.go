// Command bench compares lockkit with other Go lock libraries and with
// hand-written floors, on servers it starts itself on loopback, and prints
// Markdown tables with each library's ratio to the floor of the same run.
//
// Run it from this directory (it is a module of its own, so that the
// libraries it compares never enter lockkit's dependencies):
//
//	cd bench && go run .
//
// It needs redis-server (7 or later) and memcached on the PATH (and
// PostgreSQL for its section, which is skipped without it), and takes
// about three minutes on two cores. Uncontended cells run four times
// (-passes), contention and in-memory cells half as often, each time with
// the libraries in the reverse order of the time before; -json FILE also writes
// every number as JSON; -quick runs every cell once, briefly (a smoke
// test, not a measurement); -only SECTION runs one section (redis,
// contention, redlock, memcached, postgres, memory, etcd); -libs selects
// libraries. The etcd section needs etcd on the PATH; without it, it is
// skipped.
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
	jsonOut = flag.String("json", "", "also write the results as JSON to this file")
	quick   = flag.Bool("quick", false, "run every cell once and briefly: a smoke test, not a measurement")
	only    = flag.String("only", "", "run only this section: redis, contention, redlock, memcached, postgres, memory or etcd")
	libs    = flag.String("libs", "", "run only the libraries whose name contains one of these comma-separated words (floors always run)")
	cpuProf = flag.String("cpuprofile", "", "write a CPU profile of the harness process to this file")
	passes  = flag.Int("passes", 4, "how many times each uncontended cell runs, alternating the order of the libraries (contention and in-memory cells: half as many)")
)

// selected filters libraries by -libs.
func selected(ls []library) []library {
	if *libs == "" {
		return ls
	}
	var out []library
	for _, l := range ls {
		for _, w := range strings.Split(*libs, ",") {
			if l.floor || strings.Contains(l.name, w) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// required reports whether missing servers must fail the smoke test, as
// in CI.
func required() bool {
	for _, v := range []string{os.Getenv("LOCKKIT_REQUIRE_SERVERS"), os.Getenv("CI")} {
		if v != "" && v != "0" && v != "false" {
			return true
		}
	}
	return false
}

// plan is how long and how often cells run.
type plan struct {
	passes     int           // uncontended cells
	fewer      int           // contention and in-memory cells
	throughput time.Duration // an uncontended cell
	contended  time.Duration // a contention cell
	ttl        time.Duration
}

func main() {
	flag.Parse()
	p := plan{passes: max(1, *passes), fewer: max(1, *passes/2), throughput: 750 * time.Millisecond, contended: 3 * time.Second, ttl: 10 * time.Second}
	if *quick {
		p = plan{passes: 1, fewer: 1, throughput: 150 * time.Millisecond, contended: 300 * time.Millisecond, ttl: 10 * time.Second}
	}
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
	if _, err := run(p, os.Stdout); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// extraSection is a section with servers of its own, which registers
// itself from its own file (etcd.go): it runs after the others, adds its
// cells to the results, reports them and checks its targets.
type extraSection struct {
	key     string // its name for -only
	run     func(p plan, res *results, s *servers, progress func(string, ...any)) error
	report  func(w io.Writer, r *results)
	targets func(r *results) []target
}

var extraSections []extraSection

// results is everything a run measured.
type results struct {
	Machine    machine                 `json:"machine"`
	Plan       string                  `json:"plan"`
	Throughput map[string][]cellResult `json:"throughput"` // by section
	Contention []contentionCell        `json:"contention"`
	Memory     []memoryCell            `json:"memory"`
	Targets    []target                `json:"targets"`
	sections   map[string][]string     // section -> libraries, in order
}

type cellResult struct {
	Section string `json:"section"`
	Library string `json:"library"`
	Floor   bool   `json:"floor"`
	Pass    int    `json:"pass"`
	throughputResult
	Ratio float64 `json:"ratioToFloor"`
}

type contentionCell struct {
	Library string        `json:"library"`
	Pause   time.Duration `json:"pauseNanos"`
	Pass    int           `json:"pass"`
	contentionResult
}

var prefixSeq atomic.Int64

// newEnv returns the environment of one cell, with a key prefix of its own.
func newEnv(s *servers, ttl time.Duration) env {
	addrs := make([]string, len(s.redis))
	for i, p := range s.redis {
		addrs[i] = p.Addr()
	}
	return env{redis: addrs, memcached: s.memcached.Addr(), prefix: fmt.Sprintf("bench%d:", prefixSeq.Add(1)), ttl: ttl}
}

func run(p plan, out io.Writer) (*results, error) {
	start := time.Now()
	s, err := startServers(5)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	res := &results{Throughput: map[string][]cellResult{}, sections: map[string][]string{}}
	res.Machine = describe(s)
	res.Plan = fmt.Sprintf("uncontended cells: %d runs of %v; contention cells: %d runs of %v; in memory: %d runs; TTL %v", p.passes, p.throughput, p.fewer, p.contended, p.fewer, p.ttl)
	redisLeft := func(addrs []string) leftoverFunc {
		return func(prefix string) (int, int) {
			l, f, err := leftovers(addrs, prefix)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench: counting leftovers:", err)
				return -1, -1
			}
			return l, f
		}
	}
	want := func(section string) bool { return *only == "" || *only == section }
	progress := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%5.1fs %4dg] ", time.Since(start).Seconds(), runtime.NumGoroutine())
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}

	type tsection struct {
		key, title string
		libs       []library
		goroutines int
		left       func(env) leftoverFunc
	}
	tsections := []tsection{
		{"redis", "single Redis, 64 goroutines", selected(redisLibraries()), 64, func(e env) leftoverFunc { return redisLeft(e.redis[:1]) }},
		{"redlock", "Redlock, 5 masters, 64 goroutines", selected(redlockLibraries()), 64, func(e env) leftoverFunc { return redisLeft(e.redis) }},
		{"redlock-1", "Redlock, 5 masters, 1 goroutine", selected(redlockLibraries()), 1, func(e env) leftoverFunc { return redisLeft(e.redis) }},
		{"memcached", "memcached, 64 goroutines", selected(memcachedLibraries()), 64, func(e env) leftoverFunc { return memcachedLeft(e) }},
	}
	for _, sec := range tsections {
		if !want(strings.TrimSuffix(sec.key, "-1")) {
			continue
		}
		for pass := range p.passes {
			libs := inPassOrder(sec.libs, pass)
			for _, lib := range libs {
				e := newEnv(s, p.ttl)
				r := throughput(lib, e, sec.goroutines, p.throughput, sec.goroutines == 1, sec.left(e))
				progress("%s, pass %d: %-30s %9.0f pairs/s  %5.1f allocs/pair  errors %d %s", sec.title, pass+1, lib.name, r.PairsPerSec, r.AllocsPerPair, r.Errors, r.FirstError)
				res.Throughput[sec.key] = append(res.Throughput[sec.key], cellResult{Section: sec.title, Library: lib.name, Floor: lib.floor, Pass: pass + 1, throughputResult: r})
			}
		}
		res.sections[sec.key] = names(sec.libs)
		setRatios(res.Throughput[sec.key])
	}

	if want("contention") {
		libs := selected(contentionLibraries())
		for _, pause := range []time.Duration{time.Millisecond, 0} {
			for pass := range p.fewer {
				for _, lib := range inPassOrder(libs, pass) {
					e := newEnv(s, p.ttl)
					r := contention(lib, e, 16, pause, p.contended, redisLeft(e.redis[:1]))
					progress("contention, pause %v, pass %d: %-24s %6.0f acq/s  handoff p50 %6.0fµs  wait p99 %7.0fµs  acq/handoff %5.2f  violations %d  lost %d  errors %d  still waiting %d %s",
						pause, pass+1, lib.name, r.PerSec, r.HandoffP50, r.WaitP99, r.AcqPerHandoff, r.Violations, r.LostUpdates, r.Errors, r.CutShort, r.FirstError)
					res.Contention = append(res.Contention, contentionCell{Library: lib.name, Pause: pause, Pass: pass + 1, contentionResult: r})
				}
			}
		}
		res.sections["contention"] = names(libs)
	}

	if want("postgres") {
		postgresSection(p, res, progress)
	}

	if want("memory") {
		res.Memory = memorySection(p, progress)
		res.sections["memory"] = names(memoryLibraries())
	}

	for _, x := range extraSections {
		if want(x.key) {
			if err := x.run(p, res, s, progress); err != nil {
				return nil, fmt.Errorf("%s section: %w", x.key, err)
			}
		}
	}

	res.Targets = checkTargets(res)
	report(out, res, time.Since(start))
	if *jsonOut != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return res, err
		}
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return res, err
		}
	}
	return res, nil
}

// inPassOrder returns libs in the order of a pass: as given in even
// passes, reversed in odd ones, so that no library always runs first.
func inPassOrder(libs []library, pass int) []library {
	order := slices.Clone(libs)
	if pass%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

func names(libs []library) []string {
	var out []string
	for _, l := range libs {
		out = append(out, l.name)
	}
	return out
}

// setRatios sets each cell's ratio to the floor of the same pass.
func setRatios(cells []cellResult) {
	floor := map[int]float64{}
	for _, c := range cells {
		if c.Floor {
			floor[c.Pass] = c.PairsPerSec
		}
	}
	for i := range cells {
		if f := floor[cells[i].Pass]; f > 0 {
			if cells[i].P50 > 0 { // latency cells: the floor's latency over ours, so > 1 is better too
				var fl float64
				for _, c := range cells {
					if c.Floor && c.Pass == cells[i].Pass {
						fl = c.P50
					}
				}
				if cells[i].P50 > 0 && fl > 0 {
					cells[i].Ratio = fl / cells[i].P50
				}
				continue
			}
			cells[i].Ratio = cells[i].PairsPerSec / f
		}
	}
}

// machine describes where the run happened.
type machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	Go        string `json:"go"`
	Redis     string `json:"redis"`
	Memcached string `json:"memcached"`
	LoadAvg   string `json:"loadAvgAtStart"`
	Date      string `json:"date"`
}

func describe(s *servers) machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	m.Redis, m.Memcached = s.versions()
	return m
}
