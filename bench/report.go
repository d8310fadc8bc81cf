package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

func contentionLibraries() []library {
	return []library{
		{name: "lockkit", open: func(e env) (client, error) { return openLockkit(e, false) }},
		{name: "lockkit NoFence", open: func(e env) (client, error) { return openLockkit(e, true) }},
		{name: "rueidislock", open: openRueidislock},
		{name: "redsync (rueidis)", open: openRedsyncRueidis},
		{name: "redsync (go-redis)", open: openRedsyncGoRedis},
		{name: "bsm/redislock", open: openBSM},
		{name: "rueidis raw poller", open: openRawRueidis},
	}
}

// target is one line of the table, checked against this run.
type target struct {
	Workload string `json:"workload"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// byLib returns the cells of lib in section, one per pass.
func byLib(cells []cellResult, lib string) []cellResult {
	var out []cellResult
	for _, c := range cells {
		if c.Library == lib {
			out = append(out, c)
		}
	}
	return out
}

// ratioPerPass returns the median over passes of a's value over b's in
// the same pass.
func ratioPerPass(cells []cellResult, a, b string, value func(cellResult) float64) float64 {
	var rs []float64
	for _, ca := range byLib(cells, a) {
		for _, cb := range byLib(cells, b) {
			if ca.Pass == cb.Pass && value(cb) > 0 {
				rs = append(rs, value(ca)/value(cb))
			}
		}
	}
	slices.Sort(rs)
	return median(rs)
}

// stuck notes the Locks of a contention cell that were still waiting two
// seconds after its end.
func stuck(cs []contentionCell) string {
	n := 0
	for _, c := range cs {
		n += c.CutShort
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d Locks still waiting 2s after the end)", n)
}

func contentionOf(cells []contentionCell, lib string, pause time.Duration) []contentionCell {
	var out []contentionCell
	for _, c := range cells {
		if c.Library == lib && c.Pause == pause {
			out = append(out, c)
		}
	}
	return out
}

func checkTargets(r *results) []target {
	var ts []target
	add := func(workload, want, measured string, met bool) {
		ts = append(ts, target{workload, want, measured, met})
	}
	pps := func(c cellResult) float64 { return c.PairsPerSec }
	if cells := r.Throughput["redis"]; len(cells) > 0 {
		for _, lib := range []string{"lockkit", "lockkit NoFence"} {
			f := ratioPerPass(cells, lib, "rueidis raw (floor)", pps)
			rs := ratioPerPass(cells, lib, "redsync (rueidis)", pps)
			add("single Redis, 64 goroutines ("+lib+")", "≥ 0.95× raw rueidis; ≥ 1.25× redsync (rueidis)",
				fmt.Sprintf("%.2f× raw; %.2f× redsync", f, rs), f >= 0.95 && rs >= 1.25)
			allocs := medianOf(byLib(cells, lib), func(c cellResult) float64 { return c.AllocsPerPair })
			add("allocations per pair, single Redis ("+lib+")", "≤ 8", fmt.Sprintf("%.1f", allocs), allocs <= 8)
		}
	}
	if r.sections["contention"] != nil {
		ms := time.Millisecond
		ours := contentionOf(r.Contention, "lockkit", ms)
		theirs := contentionOf(r.Contention, "rueidislock", ms)
		acq := medianOf(ours, func(c contentionCell) float64 { return c.PerSec })
		racq := medianOf(theirs, func(c contentionCell) float64 { return c.PerSec })
		h50 := medianOf(ours, func(c contentionCell) float64 { return c.HandoffP50 })
		w99 := medianOf(ours, func(c contentionCell) float64 { return c.WaitP99 })
		add("contention, 16 clients, 1ms pause", "acq/s ≥ rueidislock; handoff ≤ 250µs median; p99 wait ≤ 15ms",
			fmt.Sprintf("%.0f vs %.0f acq/s; handoff p50 %.0fµs; wait p99 %.1fms", acq, racq, h50, w99/1000),
			acq >= racq && h50 <= 250 && w99 <= 15000)
		ours = contentionOf(r.Contention, "lockkit", 0)
		acq = medianOf(ours, func(c contentionCell) float64 { return c.PerSec })
		fair := medianOf(ours, func(c contentionCell) float64 { return c.AcqPerHandoff })
		best, bestName := 0.0, ""
		for _, lib := range []string{"redsync (rueidis)", "redsync (go-redis)", "bsm/redislock", "rueidis raw poller"} {
			if v := medianOf(contentionOf(r.Contention, lib, 0), func(c contentionCell) float64 { return c.PerSec }); v > best {
				best, bestName = v, lib
			}
		}
		add("contention, no pause", "≥ 0.9× the best poller; ≤ 2 acquisitions per handoff",
			fmt.Sprintf("%.2f× %s; %.2f acquisitions per handoff", acq/best, bestName, fair), acq >= 0.9*best && fair <= 2)
		viol := 0
		for _, c := range r.Contention {
			viol += c.Violations + c.LostUpdates
		}
		add("contention, every library", "no mutual-exclusion violation, no lost update", fmt.Sprintf("%d", viol), viol == 0)
	}
	if cells := r.Throughput["redlock"]; len(cells) > 0 {
		v := ratioPerPass(cells, "lockkit MultiLocker", "raw parallel fan-out (floor)", pps)
		add("Redlock, 5 masters, 64 goroutines", "≥ 1.3× a parallel raw fan-out", fmt.Sprintf("%.2f×", v), v >= 1.3)
	}
	if cells := r.Throughput["redlock-1"]; len(cells) > 0 {
		ours := medianOf(byLib(cells, "lockkit MultiLocker"), func(c cellResult) float64 { return c.P50 })
		raw := medianOf(byLib(cells, "raw parallel fan-out (floor)"), func(c cellResult) float64 { return c.P50 })
		add("Redlock, 5 masters, 1 goroutine", "p50 ≤ the parallel raw fan-out", fmt.Sprintf("%.0fµs vs %.0fµs", ours, raw), ours <= raw)
	}
	if cells := r.Throughput["memcached"]; len(cells) > 0 {
		v := ratioPerPass(cells, "lockkit SingleLocker", "gomemcache raw (floor)", pps)
		s := ratioPerPass(cells, "lockkit store", "gomemcache raw (floor)", pps)
		add("memcached, 64 goroutines", "≥ 0.9× raw add/gets/cas", fmt.Sprintf("locker %.2f×, store %.2f×", v, s), v >= 0.9)
	}
	ts = append(ts, postgresTargets(r)...)
	if len(r.Memory) > 0 {
		for _, lib := range []string{"lockkit memory store", "lockkit SingleLocker"} {
			var cells []memoryCell
			for _, c := range r.Memory {
				if c.Library == lib {
					cells = append(cells, c)
				}
			}
			ns := medianOf(cells, func(c memoryCell) float64 { return c.NsPerPair })
			allocs := medianOf(cells, func(c memoryCell) float64 { return float64(c.AllocsPair) })
			sc := medianOf(cells, func(c memoryCell) float64 { return c.Scaling })
			add("memory ("+lib+")", "≤ 250ns and ≤ 2 allocs per pair on one core; scales with cores",
				fmt.Sprintf("%.0fns, %.0f allocs; ×%.2f on %d cores", ns, allocs, sc, cells[0].Cores), ns <= 250 && allocs <= 2 && sc >= 1.5)
		}
	}
	for _, x := range extraSections {
		ts = append(ts, x.targets(r)...)
	}
	return ts
}

// report prints the results as Markdown.
func report(w io.Writer, r *results, took time.Duration) {
	m := r.Machine
	fmt.Fprintf(w, "## lockkit benchmark\n\n")
	fmt.Fprintf(w, "%s, %d cores; %s; Redis %s; memcached %s; load average at start %s; %s. %s. Took %v.\n\n",
		m.CPU, m.Cores, m.Go, m.Redis, m.Memcached, m.LoadAvg, m.Date, r.Plan, took.Round(time.Second))
	fmt.Fprintf(w, "Each cell ran several times, every time with the libraries in the reverse order of the time before. With two runs a value reads \"run 1 / run 2\"; with more, \"median (lowest–highest)\". Ratios are to the floor of the same run.\n\n")

	titles := map[string]string{
		"redis":     "Single Redis: 64 goroutines, each on its own key, TryLock+Unlock pairs",
		"redlock":   "Redlock over 5 masters: 64 goroutines, each on its own key",
		"redlock-1": "Redlock over 5 masters: 1 goroutine (latency of a TryLock+Unlock pair)",
		"memcached": "memcached: 64 goroutines, each on its own key",
		"postgres":  "PostgreSQL (fsync off): 64 goroutines, each on its own key, one pool",
	}
	for _, key := range []string{"redis", "redlock", "redlock-1", "memcached", "postgres"} {
		throughputTable(w, r, key, titles[key])
	}

	contentionTables(w, r, "contention", "16 clients (separate connections) on one key")

	if len(r.Memory) > 0 {
		fmt.Fprintf(w, "### In memory: TryLock+Unlock on one core, and on distinct keys with 1 and %d cores\n\n", r.Memory[0].Cores)
		fmt.Fprintf(w, "| library | ns/pair (1 core) | × floor | allocs/pair | pairs/s, 1 core | pairs/s, %d cores | scaling |\n|---|---|---|---|---|---|---|\n", r.Memory[0].Cores)
		for _, lib := range r.sections["memory"] {
			var cs []memoryCell
			for _, c := range r.Memory {
				if c.Library == lib {
					cs = append(cs, c)
				}
			}
			f := func(format string, v func(memoryCell) float64) string { return summary(format, values(cs, v)) }
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", lib,
				f("%.0f", func(c memoryCell) float64 { return c.NsPerPair }),
				f("%.2f", func(c memoryCell) float64 { return c.RatioFloor }),
				f("%.0f", func(c memoryCell) float64 { return float64(c.AllocsPair) }),
				f("%.0f", func(c memoryCell) float64 { return c.OneCore }),
				f("%.0f", func(c memoryCell) float64 { return c.AllCores }),
				f("%.2f", func(c memoryCell) float64 { return c.Scaling }))
		}
		fmt.Fprintln(w)
	}

	for _, x := range extraSections {
		x.report(w, r)
	}

	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "### Targets (issue 6), this run\n\n| workload | target | measured (median of runs) | met |\n|---|---|---|---|\n")
		for _, t := range r.Targets {
			met := "no"
			if t.Met {
				met = "yes"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.Workload, t.Target, t.Measured, met)
		}
		fmt.Fprintln(w)
	}
}

// throughputTable prints the table of a throughput section, if it ran: a
// latency table for the one-goroutine sections (key ending in "-1").
func throughputTable(w io.Writer, r *results, key, title string) {
	cells := r.Throughput[key]
	if len(cells) == 0 {
		return
	}
	latency := strings.HasSuffix(key, "-1")
	fmt.Fprintf(w, "### %s\n\n", title)
	if latency {
		fmt.Fprintf(w, "| library | p50 µs | p99 µs | × floor (p50) | allocs/pair | errors | leftover keys |\n|---|---|---|---|---|---|---|\n")
	} else {
		fmt.Fprintf(w, "| library | pairs/s | × floor | allocs/pair | errors | leftover keys |\n|---|---|---|---|---|---|\n")
	}
	for _, lib := range r.sections[key] {
		cs := byLib(cells, lib)
		name := lib
		if len(cs) > 0 && cs[0].Floor {
			name = "**" + lib + "**"
		}
		left := joinInts(cs, func(c cellResult) int { return c.Leftover })
		fences := 0
		for _, c := range cs {
			fences += c.Fences
		}
		if fences > 0 {
			left += " (+ " + joinInts(cs, func(c cellResult) int { return c.Fences }) + " fence counters or waiters' queues)"
		}
		if latency {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", name,
				join(cs, "%.0f", func(c cellResult) float64 { return c.P50 }),
				join(cs, "%.0f", func(c cellResult) float64 { return c.P99 }),
				join(cs, "%.2f", func(c cellResult) float64 { return c.Ratio }),
				join(cs, "%.1f", func(c cellResult) float64 { return c.AllocsPerPair }),
				joinInts(cs, func(c cellResult) int { return int(c.Errors) }), left)
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", name,
			join(cs, "%.0f", func(c cellResult) float64 { return c.PairsPerSec }),
			join(cs, "%.2f", func(c cellResult) float64 { return c.Ratio }),
			join(cs, "%.1f", func(c cellResult) float64 { return c.AllocsPerPair }),
			joinInts(cs, func(c cellResult) int { return int(c.Errors) }), left)
	}
	fmt.Fprintln(w)
	for _, c := range cells {
		if c.FirstError != "" {
			fmt.Fprintf(w, "- %s, run %d, first error: %s\n", c.Library, c.Pass, c.FirstError)
		}
	}
}

// contentionTables prints the contention tables of the libraries of a
// section, one per pause, if it ran.
func contentionTables(w io.Writer, r *results, section, what string) {
	libs := r.sections[section]
	var cells []contentionCell
	for _, c := range r.Contention {
		if slices.Contains(libs, c.Library) {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return
	}
	for _, pause := range []time.Duration{time.Millisecond, 0} {
		fmt.Fprintf(w, "### Contention: %s, Lock → update → Unlock, pause after unlock %v\n\n", what, pause)
		fmt.Fprintf(w, "| library | acquisitions/s | handoff p50 µs | handoff p99 µs | wait p50 µs | wait p99 µs | longest wait ms | acquisitions per handoff | violations | lost updates | errors | leftover keys |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, lib := range libs {
			cs := contentionOf(cells, lib, pause)
			f := func(format string, v func(contentionCell) float64) string { return summary(format, values(cs, v)) }
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", lib,
				f("%.0f", func(c contentionCell) float64 { return c.PerSec }),
				f("%.0f", func(c contentionCell) float64 { return c.HandoffP50 }),
				f("%.0f", func(c contentionCell) float64 { return c.HandoffP99 }),
				f("%.0f", func(c contentionCell) float64 { return c.WaitP50 }),
				f("%.0f", func(c contentionCell) float64 { return c.WaitP99 }),
				f("%.1f", func(c contentionCell) float64 { return c.LongestStarvedMs }),
				f("%.2f", func(c contentionCell) float64 { return c.AcqPerHandoff }),
				f("%.0f", func(c contentionCell) float64 { return float64(c.Violations) }),
				f("%.0f", func(c contentionCell) float64 { return float64(c.LostUpdates) }),
				f("%.0f", func(c contentionCell) float64 { return float64(c.Errors) })+stuck(cs),
				f("%.0f", func(c contentionCell) float64 { return float64(c.Leftover) }))
		}
		fmt.Fprintln(w)
	}
	for _, c := range cells {
		if c.FirstError != "" {
			fmt.Fprintf(w, "- %s, pause %v, run %d, first error: %s\n", c.Library, c.Pause, c.Pass, c.FirstError)
		}
	}
}

// summary renders the values of the runs of a cell: each of them when
// there are one or two, else their median and range.
func summary(format string, vals []float64) string {
	if len(vals) <= 2 {
		var parts []string
		for _, v := range vals {
			parts = append(parts, fmt.Sprintf(format, v))
		}
		return strings.Join(parts, " / ")
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	return fmt.Sprintf(format+" ("+format+"–"+format+")", median(sorted), sorted[0], sorted[len(sorted)-1])
}

// median returns the median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func medianOf[T any](xs []T, f func(T) float64) float64 {
	vals := make([]float64, len(xs))
	for i, x := range xs {
		vals[i] = f(x)
	}
	slices.Sort(vals)
	return median(vals)
}

func values[T any](xs []T, f func(T) float64) []float64 {
	vals := make([]float64, len(xs))
	for i, x := range xs {
		vals[i] = f(x)
	}
	return vals
}

func join(cs []cellResult, format string, v func(cellResult) float64) string {
	return summary(format, values(cs, v))
}

// joinInts renders counts such as errors and leftovers: their total when
// there are more than two runs.
func joinInts(cs []cellResult, v func(cellResult) int) string {
	if len(cs) > 2 {
		n := 0
		for _, c := range cs {
			n += v(c)
		}
		return fmt.Sprintf("%d in all", n)
	}
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprint(v(c)))
	}
	return strings.Join(parts, " / ")
}
