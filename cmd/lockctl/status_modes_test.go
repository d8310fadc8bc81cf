package main

import (
	"strings"
	"testing"
)

// The first line says "free" only when the lock, the read-write lock and
// the permits are all known to be free, and a count whose holders the
// stores cannot name says so.
func TestStatusState(t *testing.T) {
	no, two := false, 2
	zero := 0
	none, holds := writerNone, writerHolds
	writer := "h 1 refresh 2026-11-25T02:13:13Z"
	free := &rwStatus{Readers: &zero, ReaderHolders: []string{}, Writer: &none}
	for _, c := range []struct {
		name string
		rep  statusReport
		want string
	}{
		{"all free", statusReport{Held: &no, RWLock: free, Permits: &permitStatus{Limit: 2, Held: &zero, Free: &two}}, "r: free\n  permits: 0 of 2 held, 2 free\n"},
		{"rwlock unknown", statusReport{Held: &no, RWLock: &rwStatus{Error: "down"}}, "r: lock free; the rest unknown (below)\n  read-write lock: unknown (down)\n"},
		{"writer", statusReport{Held: &no, RWLock: &rwStatus{Readers: &zero, ReaderHolders: []string{}, Writer: &holds, WriterHolder: &writer}},
			"r: held --exclusive by " + writer + "\n  read-write lock: no readers, a writer holds it\n  TAKEN AS  HOLDER\n  writer    " + writer + "\n"},
		{"unnamed permits", statusReport{Held: &no, RWLock: free, Permits: &permitStatus{Limit: 3, Held: &two, Free: new(int)}},
			"r: 2 of 3 permits held\n  permits: 2 of 3 held, 0 free (the stores cannot tell by whom)\n"},
		{"readers, writer unknown", statusReport{Held: &no, RWLock: &rwStatus{Readers: &two, Error: "writer: down"}},
			"r: held --shared by 2 readers\n  read-write lock: unknown (writer: down)\n"},
		{"unnamed readers", statusReport{Held: &no, RWLock: &rwStatus{Readers: &two, Writer: &none}},
			"r: held --shared by 2 readers\n  read-write lock: 2 readers, no writer (the stores cannot tell by whom)\n"},
	} {
		c.rep.Resource = "r"
		var out strings.Builder
		if err := c.rep.printModes(&out); err != nil || out.String() != c.want {
			t.Errorf("%s: printModes = %q, %v; want %q", c.name, out.String(), err, c.want)
		}
	}
}
