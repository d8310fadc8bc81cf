package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// report prints the results as Markdown.
func report(w io.Writer, r *results, took time.Duration) {
	m := r.Machine
	servers := "Redis " + m.Redis + ", memcached " + m.Memcached
	if m.Etcd != "" {
		servers += ", etcd " + m.Etcd
	}
	if m.Postgres != "" {
		servers += ", PostgreSQL " + m.Postgres
	}
	fmt.Fprintf(w, "## lockkit benchmark\n\n")
	fmt.Fprintf(w, "- Machine: %s, %d cores, GOMAXPROCS %d; %s; %s\n", m.CPU, m.Cores, m.GOMAXPROCS, m.OS, m.Go)
	fmt.Fprintf(w, "- Servers, on loopback: %s\n", servers)
	fmt.Fprintf(w, "- lockkit %s; %s\n", m.Lockkit, strings.Join(m.Libraries, ", "))
	fmt.Fprintf(w, "- %s; load average %s at the start, %s at the end; took %v\n", m.Date, m.LoadStart, m.LoadEnd, took.Round(time.Second))
	fmt.Fprintf(w, "- %s\n", r.Plan)
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "- Skipped, %s\n", s)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Every cell ran several times, each time with the libraries' order (within a names row) turned by one place: "+
		"a value reads \"median (lowest–highest)\" over the runs (with one or two runs, each value). Ratios are to the floor "+
		"of the same run, with the same names. Fresh names: a new name for every lock, as a service that locks per request; "+
		"reused: each goroutine locks its own name again and again. Allocations per pair count every allocation of the "+
		"process, the fresh name the harness makes included (one; the floors show it).\n\n")

	for _, sec := range r.Sections {
		if sec.Kind == kindContention {
			contentionTables(w, sec)
		} else {
			throughputTable(w, sec)
		}
	}

	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "### Targets, this run\n\n| issue | workload | target | measured: median (lowest–highest) | met |\n|---|---|---|---|---|\n")
		for _, t := range r.Targets {
			met := "**no**"
			if t.Met {
				met = "yes"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", t.Issue, t.Workload, t.Target, t.Measured, met)
		}
		fmt.Fprintln(w)
	}
}

// cellsOf returns the cells of lib with names in sec, one per pass.
func cellsOf(sec *sectionResult, lib, names string) []cellResult {
	if sec == nil {
		return nil
	}
	return filter(sec.Throughput, func(c cellResult) bool { return c.Library == lib && c.Names == names })
}

func filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// throughputTable prints the table of an uncontended section: for each
// library a row with fresh names, then one with reused names.
func throughputTable(w io.Writer, sec *sectionResult) {
	fmt.Fprintf(w, "### %s\n\n", sec.Title)
	const left = "leftover keys: locks, per resource, server-wide"
	switch sec.Kind {
	case kindLatency:
		fmt.Fprintf(w, "| library | names | p50 µs | p99 µs | × floor (p50) | allocs/pair | fenced | errors | %s |\n|---|---|---|---|---|---|---|---|---|\n", left)
	case kindOneCore:
		fmt.Fprintf(w, "| library | names | ns/pair | × floor's time | allocs/pair | errors |\n|---|---|---|---|---|---|\n")
	default:
		fmt.Fprintf(w, "| library | names | pairs/s | × floor | allocs/pair | fenced | errors | %s |\n|---|---|---|---|---|---|---|---|\n", left)
	}
	for _, lib := range sec.Libraries {
		name := lib
		if lib == sec.Floor {
			name = "**" + lib + "**"
		}
		for _, n := range []string{fresh, reused} {
			cs := cellsOf(sec, lib, n)
			if len(cs) == 0 {
				continue
			}
			f := func(format string, v func(cellResult) float64) string { return summary(format, values(cs, v)) }
			allocs := f("%.1f", func(c cellResult) float64 { return c.AllocsPerPair })
			errs := joinInts(cs, func(c cellResult) int { return int(c.Errors) })
			switch sec.Kind {
			case kindLatency:
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, n,
					f("%.0f", func(c cellResult) float64 { return c.P50 }),
					f("%.0f", func(c cellResult) float64 { return c.P99 }),
					f("%.2f", func(c cellResult) float64 { return c.Ratio }),
					allocs, fencedOf(cs), errs, leftoversOf(cs, func(c cellResult) leftovers { return c.Left }))
			case kindOneCore:
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", name, n,
					f("%.0f", func(c cellResult) float64 { return nsPerPair(c) }),
					f("%.2f", func(c cellResult) float64 { return 1 / c.Ratio }),
					allocs, errs)
			default:
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, n,
					f("%.0f", func(c cellResult) float64 { return c.PairsPerSec }),
					f("%.2f", func(c cellResult) float64 { return c.Ratio }),
					allocs, fencedOf(cs), errs, leftoversOf(cs, func(c cellResult) leftovers { return c.Left }))
			}
		}
	}
	fmt.Fprintln(w)
	for _, c := range sec.Throughput {
		if c.FirstError != "" {
			fmt.Fprintf(w, "- %s, %s names, run %d, first error: %s\n", c.Library, c.Names, c.Pass, c.FirstError)
		}
		if c.Left.Err != "" {
			fmt.Fprintf(w, "- %s, %s names, run %d, leftovers not counted: %s\n", c.Library, c.Names, c.Pass, c.Left.Err)
		}
	}
}

func nsPerPair(c cellResult) float64 {
	if c.PairsPerSec == 0 {
		return math.NaN()
	}
	return 1e9 / c.PairsPerSec
}

// fencedOf says whether the locks of a row carried fences: "yes", "no",
// both when runs differed, or "—" for libraries that cannot tell.
func fencedOf(cs []cellResult) string {
	var seen []string
	for _, c := range cs {
		if c.Fenced != "" && !slices.Contains(seen, c.Fenced) {
			seen = append(seen, c.Fenced)
		}
	}
	if len(seen) == 0 {
		return "—"
	}
	return strings.Join(seen, ", ")
}

// leftoversOf renders the leftovers of a row's runs: each count, or its
// range when runs differed; "?" when a count failed.
func leftoversOf[T any](cs []T, left func(T) leftovers) string {
	var parts []string
	for _, v := range []func(leftovers) int{
		func(l leftovers) int { return l.Locks },
		func(l leftovers) int { return l.PerResource },
		func(l leftovers) int { return l.ServerWide },
	} {
		lo, hi, failed := math.MaxInt, math.MinInt, false
		for _, c := range cs {
			l := left(c)
			if l.Err != "" {
				failed = true
				continue
			}
			lo, hi = min(lo, v(l)), max(hi, v(l))
		}
		switch {
		case failed:
			parts = append(parts, "?")
		case lo == hi:
			parts = append(parts, fmt.Sprint(lo))
		default:
			parts = append(parts, fmt.Sprintf("%d–%d", lo, hi))
		}
	}
	return strings.Join(parts, ", ")
}

// contentionOf returns the cells of lib at pause in sec, one per pass.
func contentionOf(sec *sectionResult, lib string, pause time.Duration) []contentionCell {
	if sec == nil {
		return nil
	}
	return filter(sec.Contention, func(c contentionCell) bool { return c.Library == lib && c.Pause == pause })
}

// contentionTables prints a contention section's tables, one per pause.
func contentionTables(w io.Writer, sec *sectionResult) {
	for _, pause := range sec.Pauses {
		when := "pause " + pause.String()
		if pause == 0 {
			when = "no pause: re-lock at once"
		}
		fmt.Fprintf(w, "### %s: %s\n\n", sec.Title, when)
		fmt.Fprintf(w, "| library | acquisitions/s | acquisitions per handoff | handoff p50 µs | wait p50 ms | wait p99 ms | max wait ms | max wait, in acquisitions by others | most passed over | workers served | violations, lost updates | errors | leftover keys: locks, per resource, server-wide |\n")
		fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, lib := range sec.Libraries {
			cs := contentionOf(sec, lib, pause)
			if len(cs) == 0 {
				continue
			}
			f := func(format string, v func(contentionCell) float64) string { return summary(format, values(cs, v)) }
			perHandoff, handoffP50 := "—", "—"
			if !overlapping(sec) {
				perHandoff = f("%.2f", func(c contentionCell) float64 { return c.AcqPerHandoff })
				handoffP50 = f("%.0f", func(c contentionCell) float64 { return c.HandoffP50 })
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s of %d | %s, %s | %s%s | %s |\n", lib,
				f("%.0f", func(c contentionCell) float64 { return c.PerSec }),
				perHandoff, handoffP50,
				f("%.1f", func(c contentionCell) float64 { return c.WaitP50 }),
				f("%.1f", func(c contentionCell) float64 { return c.WaitP99 }),
				f("%.0f", func(c contentionCell) float64 { return c.WaitMax }),
				f("%.0f", func(c contentionCell) float64 { return float64(c.WaitMaxAcqs) }),
				f("%.0f", func(c contentionCell) float64 { return float64(c.PassedOverMax) }),
				f("%.0f", func(c contentionCell) float64 { return float64(c.Served) }), cs[0].Workers,
				f("%.0f", func(c contentionCell) float64 { return float64(c.Violations) }),
				f("%.0f", func(c contentionCell) float64 { return float64(c.LostUpdates) }),
				f("%.0f", func(c contentionCell) float64 { return float64(c.Errors) }), stuck(cs),
				leftoversOf(cs, func(c contentionCell) leftovers { return c.Left }))
		}
		fmt.Fprintln(w)
	}
	if overlapping(sec) {
		fmt.Fprintf(w, "Holders of permits overlap, so a handoff (a release, then the next acquisition by another worker) is not defined here: those columns show —.\n\n")
	}
	for _, c := range sec.Contention {
		if c.FirstError != "" {
			fmt.Fprintf(w, "- %s, pause %v, run %d, first error: %s\n", c.Library, c.Pause, c.Pass, c.FirstError)
		}
	}
}

// overlapping reports whether sec's holders may overlap (permits), so
// that handoffs between them mean nothing.
func overlapping(sec *sectionResult) bool { return sec.Key == "permits-contention" }

// stuck notes the Locks of a row that were still waiting two seconds
// after the end of their cell.
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
	sorted := slices.Sorted(slices.Values(vals))
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

func values[T any](xs []T, f func(T) float64) []float64 {
	vals := make([]float64, len(xs))
	for i, x := range xs {
		vals[i] = f(x)
	}
	return vals
}

// joinInts renders counts such as errors: their total when there are more
// than two runs.
func joinInts[T any](cs []T, v func(T) int) string {
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
