package faultkit

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseLine parses a report line (see [contention.Report.Line]) into its fields, in
// order; the line may carry a prefix, such as the file and line that
// go test -v logs before it. It returns false for a line that is not a
// report line.
func ParseLine(line string) (keys []string, fields map[string]string, ok bool) {
	i := strings.Index(line, "faultsuite ")
	if i < 0 {
		return nil, nil, false
	}
	rest := strings.TrimSpace(line[i+len("faultsuite "):])
	fields = make(map[string]string)
	for rest != "" {
		key, after, found := strings.Cut(rest, "=")
		if !found || key == "" || strings.ContainsAny(key, " \"") {
			return nil, nil, false
		}
		var value string
		if strings.HasPrefix(after, `"`) {
			q, err := strconv.QuotedPrefix(after)
			if err != nil {
				return nil, nil, false
			}
			value, _ = strconv.Unquote(q)
			after = after[len(q):]
		} else {
			value, after, _ = strings.Cut(after, " ")
			after = " " + after
		}
		keys = append(keys, key)
		fields[key] = value
		rest = strings.TrimLeft(after, " ")
	}
	return keys, fields, true
}

// tableColumns are the standard fields shown in a table, with their
// headings; the other fields of a line go to the last column.
var tableColumns = [][2]string{
	{"scenario", "scenario"}, {"backend", "backend"}, {"acquisitions", "acq"},
	{"violations", "viol"}, {"max_overlap_ms", "max overlap ms"}, {"lost_updates", "lost upd"},
	{"stale_accepted", "stale acc"}, {"validity_violations", "validity viol"},
	{"p50_ms", "p50 ms"}, {"p99_ms", "p99 ms"}, {"fault_success", "success in fault"},
	{"recovery_ms", "recovery ms"}, {"residue", "residue"}, {"leaked_goroutines", "leaks"},
}

// hidden are standard fields not shown in the table's columns nor in its
// last one.
var hidden = map[string]bool{"unknown": true, "max_holders": true, "fenced_rejected": true, "fenced_writes": true, "validity_checked": true}

// Table reads report lines (other lines are skipped) and writes them as a
// Markdown table, one row per scenario and backend — the last line of
// each, in the order they first appear — with the scenario-specific
// fields in the last column.
func Table(r io.Reader, w io.Writer) error {
	type row struct {
		keys   []string
		fields map[string]string
	}
	var order []string
	rows := make(map[string]row)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		keys, fields, ok := ParseLine(sc.Text())
		if !ok {
			continue
		}
		id := fields["scenario"] + "\x00" + fields["backend"]
		if _, seen := rows[id]; !seen {
			order = append(order, id)
		}
		rows[id] = row{keys, fields}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("|")
	for _, c := range tableColumns {
		b.WriteString(" " + c[1] + " |")
	}
	b.WriteString(" other |\n|")
	for range len(tableColumns) + 1 {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	standard := make(map[string]bool)
	for _, c := range tableColumns {
		standard[c[0]] = true
	}
	for _, id := range order {
		r := rows[id]
		b.WriteString("|")
		for _, c := range tableColumns {
			b.WriteString(" " + escapeCell(r.fields[c[0]]) + " |")
		}
		var extra []string
		for _, k := range r.keys {
			if !standard[k] && !hidden[k] {
				extra = append(extra, k+"="+r.fields[k])
			}
		}
		b.WriteString(" " + escapeCell(strings.Join(extra, " ")) + " |\n")
	}
	_, err := fmt.Fprint(w, b.String())
	return err
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
