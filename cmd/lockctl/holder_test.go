package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A holder name is "HOST PID COMMAND SINCE", fits the library's limit
// whatever the host and command, and is a holder the library accepts.
func TestHolderName(t *testing.T) {
	since := time.Date(2026, 11, 24, 20, 0, 0, 999, time.FixedZone("CET", 3600))
	if got, want := holderName("ci-3", 4242, []string{"make", "deploy"}, since), "ci-3 4242 make deploy 2026-11-24T19:00:00Z"; got != want {
		t.Errorf("holderName = %q; want %q", got, want)
	}
	long := strings.Repeat("é", 300)
	for _, c := range []struct {
		host    string
		command []string
		says    string // a part of the holder name
	}{
		{"", []string{"x"}, "? 1 x "},
		{"h~st", []string{"a~b", "tab\there", "nl\n", "\xff"}, "h?st 1 a?b tab?here nl? ? "},
		{long, []string{long}, "…"},
		{"h", []string{"sh", "-c", strings.Repeat("echo hi; ", 100)}, "h 1 sh -c echo hi; echo"},
	} {
		got := holderName(c.host, 1, c.command, since)
		if !strings.Contains(got, c.says) || !strings.HasSuffix(got, " 2026-11-24T19:00:00Z") || len(got) > lock.MaxHolderLen {
			t.Errorf("holderName(%.10q, 1, %.20q) = %q; want it to say %q, end in the time and fit %d bytes", c.host, c.command, got, c.says, lock.MaxHolderLen)
		}
		if _, err := lock.NewSingle(memory.New(), &lock.Options{Holder: got}); err != nil {
			t.Errorf("holderName(%.10q, 1, %.20q) = %q, which the library refuses: %v", c.host, c.command, got, err)
		}
	}
}

// acquire and run record who holds the lock, and status shows it: in
// JSON, in the first line and in a HOLDER column.
func TestStatusShowsHolder(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	eachBackend(t, func(t *testing.T, b backend) {
		status := func(resource string) statusReport {
			t.Helper()
			code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "--json"}, b.flags()...), resource)...)
			var st statusReport
			if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil {
				t.Fatalf("status --json: exit %d, %v; stdout %q, stderr %q", code, err, stdout, stderr)
			}
			return st
		}
		// checkHolder checks the holder everywhere status shows it.
		checkHolder := func(resource, prefix string, from, to time.Time) {
			t.Helper()
			st := status(resource)
			if st.Holder == nil || !strings.HasPrefix(*st.Holder, prefix) {
				t.Fatalf("status --json while held: holder %v; want %q…", st.Holder, prefix)
			}
			holder := *st.Holder
			since, err := time.Parse(time.RFC3339, holder[strings.LastIndexByte(holder, ' ')+1:])
			if err != nil || since.Before(from.Truncate(time.Second)) || since.After(to) || since.Location() != time.UTC {
				t.Errorf("holder %q: since %v, %v; want a UTC time between %v and %v", holder, since, err, from, to)
			}
			for i, s := range st.Stores {
				if s.Holder == nil || *s.Holder != holder {
					t.Errorf("store %d: holder %v; want %q", i, s.Holder, holder)
				}
			}
			code, stdout, _ := lockctl(t, nil, append(append([]string{"status"}, b.flags()...), resource)...)
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if code != 0 || lines[0] != resource+": held by "+holder || len(lines) != 2+len(b.urls) || !strings.HasSuffix(lines[1], "HOLDER") {
				t.Fatalf("status: exit %d, %q; want %q, a header ending in HOLDER and a row per store", code, stdout, resource+": held by "+holder)
			}
			for _, row := range lines[2:] {
				if !strings.HasSuffix(row, holder) || strings.Index(row, holder) != strings.Index(lines[1], "HOLDER") {
					t.Errorf("status row %q; want the holder under HOLDER in %q", row, lines[1])
				}
			}
		}

		file := filepath.Join(t.TempDir(), "job.lock")
		from := time.Now()
		if code, _, stderr := lockctl(t, nil, append(append([]string{"acquire", "--ttl", "1m", "--lock", file}, b.flags()...), "ci/deploy")...); code != 0 {
			t.Fatalf("acquire: exit %d, %s", code, stderr)
		}
		// The parent of lockctl acquire, this test, holds it.
		checkHolder("ci/deploy", host+" "+strconv.Itoa(os.Getpid())+" lockctl acquire ", from, time.Now())
		if code, _, stderr := lockctl(t, nil, append([]string{"release", "--lock", file}, b.flags()...)...); code != 0 {
			t.Fatalf("release --lock: exit %d, %s", code, stderr)
		}
		if st := status("ci/deploy"); st.Holder != nil || st.Stores[0].Holder != nil {
			t.Errorf("status --json once released: holder %v, store 0's %v; want null", st.Holder, st.Stores[0].Holder)
		}

		s := newScene(t)
		from = time.Now()
		p := s.run("one", b.flags(), "nightly", "WAIT=1")
		s.ready("one")
		// A Redlock's run starts the command once a quorum granted the
		// lock; the other stores' acquisitions may still be landing.
		eventually(t, 30*time.Second, "status --json: a store never showed the run's holder", func() bool {
			for _, s := range status("nightly").Stores {
				if s.Holder == nil {
					return false
				}
			}
			return true
		})
		_, argv := s.command("one")
		checkHolder("nightly", host+" "+strconv.Itoa(p.cmd.Process.Pid)+" "+holderPart(strings.Join(argv, " "), maxHolderCommand)+" ", from, time.Now())
		s.finish("one")
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("run: exit %d; stderr %s", code, p.stderr)
		}
	})
}
