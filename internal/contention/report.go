package contention

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// NotChecked marks Report.Residue and Report.LeakedGoroutines as not
// measured.
const NotChecked = -1

// Report holds the figures of one scenario. Build it with [Analyze] or
// [Result.Report], fill in Residue and LeakedGoroutines, and print its [Report.Line].
type Report struct {
	Scenario string // e.g. "kill-master"
	Backend  string // e.g. "redis", "redlock-3", "memcache"

	Acquisitions int // OK acquisitions
	Unknown      int // acquisitions with an unknown outcome

	// Overlap checker: mutual-exclusion violations, the most holders at
	// once, and the longest overlap.
	Violations int
	MaxHolders int
	MaxOverlap time.Duration

	LostUpdates    int // lost-update counter
	StaleAccepted  int // fenced resource: stale writes accepted (must be 0)
	FencedRejected int // fenced resource: writes refused
	FencedWrites   int // fenced resource: writes offered (0 without fences)

	ValidityViolations int // reported validity outlived a quorum's expiry
	ValidityChecked    int // server TTL reads that answered

	P50, P99 time.Duration // latency of OK acquisitions

	// FaultSuccess is the success rate of the acquisitions begun while a
	// fault was in effect (over every window; a call in two overlapping
	// windows counts twice), NaN when the run had no fault window or no
	// call in it. Recovery is the longest time from a fault's healing to the
	// next OK acquisition; Recovered is false if some fault was never
	// followed by one (or never healed).
	FaultSuccess float64
	Recovery     time.Duration
	Recovered    bool
	HadFault     bool

	// Residue counts the keys left on the servers after the run and a
	// TTL; LeakedGoroutines the goroutines left over. NotChecked when not
	// measured.
	Residue          int
	LeakedGoroutines int

	// Extra holds figures particular to a scenario (a command rate, a
	// cancellation latency), appended to the line in order after the
	// standard fields. Keys must be distinct from the standard ones.
	Extra []Field
}

// Field is a figure particular to one scenario: a key made of lower-case
// letters, digits and underscores, and its value.
type Field struct{ Key, Value string }

// Add appends a scenario-specific figure to the report.
func (r *Report) Add(key, value string) { r.Extra = append(r.Extra, Field{key, value}) }

// AddMillis appends a scenario-specific duration, in milliseconds.
func (r *Report) AddMillis(key string, d time.Duration) { r.Add(key, ms(d)) }

// Analyze computes the figures that the recorder alone gives, for locks
// that must be held by one holder at a time (readers sharing).
func Analyze(scenario, backend string, rec *Recorder) Report {
	return analyze(scenario, backend, rec, 1)
}

// analyze is Analyze for resources that limit holders may hold at once.
func analyze(scenario, backend string, rec *Recorder, limit int) Report {
	ops := rec.Ops()
	rep := Report{Scenario: scenario, Backend: backend, Residue: NotChecked, LeakedGoroutines: NotChecked, FaultSuccess: math.NaN()}
	for _, op := range ops {
		if op.Kind == KindAcquire {
			switch op.Outcome {
			case OK:
				rep.Acquisitions++
			case Unknown:
				rep.Unknown++
			}
		}
	}
	ov := CheckHolders(Claims(ops), limit)
	rep.Violations, rep.MaxHolders, rep.MaxOverlap = ov.Violations, ov.MaxHolders, ov.MaxOverlap
	vs := CheckValidity(ops)
	rep.ValidityViolations, rep.ValidityChecked = vs.Violations, vs.Checked
	lat := AcquireLatencies(ops)
	rep.P50, rep.P99 = Percentile(lat, 0.50), Percentile(lat, 0.99)

	windows := rec.Windows()
	rep.HadFault = len(windows) > 0
	rep.Recovered = rep.HadFault
	ok, calls := 0.0, 0
	for _, w := range windows {
		end := w.End
		if end < 0 {
			rep.Recovered = false
			end = rec.Now()
		}
		rate, n := SuccessRate(ops, w.Start, end)
		ok += rate * float64(n)
		calls += n
		if w.End >= 0 {
			d, found := Recovery(ops, w.End)
			if !found {
				rep.Recovered = false
			}
			rep.Recovery = max(rep.Recovery, d)
		}
	}
	if calls > 0 {
		rep.FaultSuccess = ok / float64(calls)
	}
	return rep
}

// Report computes every figure of the run; the caller fills in Residue and
// LeakedGoroutines.
func (res *Result) Report(scenario, backend string) Report {
	rep := analyze(scenario, backend, res.Recorder, res.Limit)
	ops := res.Recorder.Ops()
	for _, c := range res.Counters {
		rep.LostUpdates += int(c.Lost())
	}
	for _, f := range res.Fences {
		ws := f.Writes()
		st := CheckFences(ops, ws)
		rep.StaleAccepted += st.StaleAccepted
		rep.FencedRejected += st.Rejected
		rep.FencedWrites += len(ws)
	}
	return rep
}

// Line renders the report as one machine-readable line of key=value
// fields separated by spaces, beginning with "faultsuite". Durations are
// in milliseconds; "-" marks a figure that does not apply or was not
// measured, "never" a fault with no recovery.
func (r Report) Line() string {
	var b strings.Builder
	b.WriteString("faultsuite")
	field := func(k, v string) { b.WriteString(" " + k + "=" + v) }
	field("scenario", word(r.Scenario))
	field("backend", word(r.Backend))
	field("acquisitions", strconv.Itoa(r.Acquisitions))
	field("unknown", strconv.Itoa(r.Unknown))
	field("violations", strconv.Itoa(r.Violations))
	field("max_holders", strconv.Itoa(r.MaxHolders))
	field("max_overlap_ms", ms(r.MaxOverlap))
	field("lost_updates", strconv.Itoa(r.LostUpdates))
	field("stale_accepted", strconv.Itoa(r.StaleAccepted))
	field("fenced_rejected", strconv.Itoa(r.FencedRejected))
	field("fenced_writes", strconv.Itoa(r.FencedWrites))
	field("validity_violations", strconv.Itoa(r.ValidityViolations))
	field("validity_checked", strconv.Itoa(r.ValidityChecked))
	if r.Acquisitions > 0 {
		field("p50_ms", ms(r.P50))
		field("p99_ms", ms(r.P99))
	} else {
		field("p50_ms", "-")
		field("p99_ms", "-")
	}
	if math.IsNaN(r.FaultSuccess) {
		field("fault_success", "-")
	} else {
		field("fault_success", strconv.FormatFloat(r.FaultSuccess, 'f', 3, 64))
	}
	switch {
	case !r.HadFault:
		field("recovery_ms", "-")
	case !r.Recovered:
		field("recovery_ms", "never")
	default:
		field("recovery_ms", ms(r.Recovery))
	}
	field("residue", count(r.Residue))
	field("leaked_goroutines", count(r.LeakedGoroutines))
	for _, f := range r.Extra {
		field(word(f.Key), word(f.Value))
	}
	return b.String()
}

// Unsafe returns a description of every safety figure that is not zero —
// violations, lost updates, stale writes accepted, validity violations,
// residue, leaked goroutines — or "" if the run was safe.
func (r Report) Unsafe() string {
	var bad []string
	for _, f := range []struct {
		name string
		n    int
	}{
		{"mutual-exclusion violations", r.Violations},
		{"lost updates", r.LostUpdates},
		{"stale writes accepted", r.StaleAccepted},
		{"validity violations", r.ValidityViolations},
		{"residual keys", r.Residue},
		{"leaked goroutines", r.LeakedGoroutines},
	} {
		if f.n > 0 {
			bad = append(bad, fmt.Sprintf("%d %s", f.n, f.name))
		}
	}
	return strings.Join(bad, ", ")
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

func count(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// word makes s a single field value: quoted if it holds a space, a quote
// or an equals sign, "-" if empty.
func word(s string) string {
	if s == "" {
		return "-"
	}
	if strings.ContainsAny(s, " \t\r\n\"=") {
		return strconv.Quote(s)
	}
	return s
}
