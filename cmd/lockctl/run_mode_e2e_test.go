package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// run -n N lets N commands in at once and no more; a run giving another N
// is refused as bad usage while permits are held.
func TestRunPermits(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newScene(t)
		flags := append([]string{"-n", "2"}, b.flags()...)
		first := s.run("first", flags, "builds", "WAIT=1", "SLOTS=2")
		second := s.run("second", flags, "builds", "WAIT=1", "SLOTS=2")
		s.ready("first")
		s.ready("second")

		// status -n shows the permits held and free.
		code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "-n", "2"}, b.flags()...), "builds")...)
		if code != 0 || !strings.Contains(stdout, "permits: 2 of 2 held, 0 free") {
			t.Errorf("status -n 2 with two permits held: exit %d, stdout %q, stderr %q; want 0 and 2 of 2 held", code, stdout, stderr)
		}
		// ... and who holds them, in JSON and in a table under the counts.
		if !strings.HasPrefix(stdout, "builds: 2 of 2 permits held\n") {
			t.Errorf("status -n 2 with two permits held: first line of %q; want \"builds: 2 of 2 permits held\"", stdout)
		}
		wantHolderRows(t, "status -n 2", stdout, "permit", first, second)
		// status with another -n says that it does not match, rather than
		// counting the permits against it.
		if b.limits {
			for _, n := range []string{"1", "3"} {
				code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "-n", n}, b.flags()...), "builds")...)
				want := "the permits on \"builds\" were taken with -n 2, not -n " + n
				if code != exitUsage || !strings.Contains(stdout, "permits: limit mismatch: "+want) || strings.Contains(stdout, " free,") || strings.Contains(stdout, " held, ") {
					t.Errorf("status -n %s with two permits of -n 2 held: exit %d, stdout %q, stderr %q; want %d and %q", n, code, stdout, stderr, exitUsage, want)
				}
				code, stdout, _ = lockctl(t, nil, append(append([]string{"status", "--json", "-n", n}, b.flags()...), "builds")...)
				var st statusReport
				if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != exitUsage || st.Permits == nil || st.Permits.TakenWith != 2 || st.Permits.Held != nil || !strings.Contains(st.Permits.Error, want) {
					t.Errorf("status --json -n %s with two permits of -n 2 held: exit %d, %v, stdout %q; want %d, taken_with 2, held null and the mismatch", n, code, err, stdout, exitUsage)
				}
			}
		}
		st := status(t, b, "-n", "2", "builds")
		if st.Permits == nil || st.Permits.Held == nil || *st.Permits.Held != 2 || *st.Permits.Free != 0 {
			t.Errorf("status --json -n 2 with two permits held: permits %+v; want held 2, free 0", st.Permits)
		} else {
			wantHolders(t, "status --json -n 2: permits", st.Permits.Holders, first, second)
		}

		code, _, stderr = lockctl(t, nil, append(append([]string{"run"}, flags...), "builds", "--", "true")...)
		if code != exitConflict || !strings.Contains(stderr, `all 2 permits of "builds" are held`) {
			t.Errorf("run -n 2 with both permits held: exit %d, stderr %q; want %d and a message", code, stderr, exitConflict)
		}
		code, _, stderr = lockctl(t, nil, append(append([]string{"run", "-n", "3"}, b.flags()...), "builds", "--", "true")...)
		if code != exitUsage || !strings.Contains(stderr, "limit") {
			t.Errorf("run -n 3 while permits of 2 are held: exit %d, stderr %q; want %d and a limit mismatch", code, stderr, exitUsage)
		}
		// A plain lock on the same name is another thing.
		if code, _, stderr := lockctl(t, nil, append(append([]string{"run"}, b.flags()...), "builds", "--", "true")...); code != 0 {
			t.Errorf("run without -n while permits are held: exit %d, stderr %q; want 0", code, stderr)
		}

		third := s.run("third", append([]string{"--wait", "1m"}, flags...), "builds", "SLOTS=2")
		s.finish("first")
		for name, p := range map[string]*proc{"first": first, "third": third} {
			if code := p.wait(t, 30*time.Second); code != 0 {
				t.Errorf("%s run: exit %d; stderr %s", name, code, p.stderr)
			}
		}
		s.finish("second")
		if code := second.wait(t, 30*time.Second); code != 0 {
			t.Errorf("second run: exit %d; stderr %s", code, second.stderr)
		}
		for _, line := range s.log() {
			if strings.HasPrefix(line, "overlap") {
				t.Errorf("log: %s: more than 2 commands ran at once", line)
			}
		}
	})
}

// run --shared lets readers in together and keeps an --exclusive run out
// while they are in; an --exclusive run keeps --shared ones out.
func TestRunSharedExclusive(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newScene(t)
		shared := append([]string{"--shared"}, b.flags()...)
		exclusive := append([]string{"--exclusive"}, b.flags()...)
		r1 := s.run("r1", shared, "dataset", "WAIT=1", "SLOTS=2")
		r2 := s.run("r2", shared, "dataset", "WAIT=1", "SLOTS=2")
		s.ready("r1")
		s.ready("r2")
		// status tells the readers, not "free".
		st := status(t, b, "dataset")
		wantRW(t, "status with two readers in", st, 2, writerNone)
		wantHolders(t, "status with two readers in: reader_holders", st.RWLock.ReaderHolders, r1, r2)
		_, stdout, _ := lockctl(t, nil, append(append([]string{"status"}, b.flags()...), "dataset")...)
		if !strings.HasPrefix(stdout, "dataset: held --shared by 2 readers\n") {
			t.Errorf("status with two readers in: %q; want it to begin \"dataset: held --shared by 2 readers\"", stdout)
		}
		wantHolderRows(t, "status with two readers in", stdout, "reader", r1, r2)
		code, _, stderr := lockctl(t, nil, append(append([]string{"run"}, exclusive...), "dataset", "--", "true")...)
		if code != exitConflict || !strings.Contains(stderr, `"dataset" is held by another owner`) {
			t.Errorf("run --exclusive while readers are in: exit %d, stderr %q; want %d and a message", code, stderr, exitConflict)
		}

		w := s.run("w", append([]string{"--wait", "1m", "--verbose"}, exclusive...), "dataset", "WAIT=1", "SLOTS=1")
		w.stderr.waitFor(t, "waiting", 30*time.Second)
		st = status(t, b, "dataset")
		wantRW(t, "status with two readers in and a writer waiting", st, 2, writerWaits)
		wantHolders(t, "status with a writer waiting: writer_holder", []string{deref(st.RWLock.WriterHolder)}, w)
		s.finish("r1")
		s.finish("r2")
		for name, p := range map[string]*proc{"r1": r1, "r2": r2} {
			if code := p.wait(t, 30*time.Second); code != 0 {
				t.Errorf("%s run: exit %d; stderr %s", name, code, p.stderr)
			}
		}
		s.ready("w")
		st = status(t, b, "dataset")
		wantRW(t, "status with a writer in", st, 0, writerHolds)
		wantHolders(t, "status with a writer in: writer_holder", []string{deref(st.RWLock.WriterHolder)}, w)
		_, stdout, _ = lockctl(t, nil, append(append([]string{"status"}, b.flags()...), "dataset")...)
		if want := "dataset: held --exclusive by " + deref(st.RWLock.WriterHolder) + "\n"; !strings.HasPrefix(stdout, want) {
			t.Errorf("status with a writer in: %q; want it to begin %q", stdout, want)
		}
		wantHolderRows(t, "status with a writer in", stdout, "writer", w)
		code, _, stderr = lockctl(t, nil, append(append([]string{"run"}, shared...), "dataset", "--", "true")...)
		if code != exitConflict || !strings.Contains(stderr, `"dataset" is held exclusively by another owner`) {
			t.Errorf("run --shared while a writer is in: exit %d, stderr %q; want %d and a message", code, stderr, exitConflict)
		}
		s.finish("w")
		if code := w.wait(t, 30*time.Second); code != 0 {
			t.Errorf("writer run: exit %d; stderr %s", code, w.stderr)
		}
		for _, line := range s.log() {
			if strings.HasPrefix(line, "overlap") {
				t.Errorf("log: %s: a writer ran beside another command", line)
			}
		}
		if st := status(t, b, "dataset"); st.RWLock.held() || st.RWLock.ReaderHolders == nil {
			t.Errorf("status once every run is done: rwlock %+v; want no readers, no writer", st.RWLock)
		}
	})
}

// Bad mode flags are refused before any store is asked.
func TestRunModeFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "want a number of permits >= 1"},
		{[]string{"-n", "x"}, "want a number of permits >= 1"},
		{[]string{"--shared", "--exclusive"}, "give one of them"},
		{[]string{"-n", "2", "--shared"}, "give one"},
	} {
		args := append(append([]string{"run"}, tc.args...), "--store", "redis://127.0.0.1:1", "r", "--", "true")
		code, _, stderr := lockctl(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lockctl %s: exit %d, stderr %q; want %d and %q", strings.Join(args, " "), code, stderr, exitUsage, tc.want)
		}
	}
}

// status runs status --json with args over b's stores and decodes it.
func status(t *testing.T, b backend, args ...string) statusReport {
	t.Helper()
	code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "--json"}, b.flags()...), args...)...)
	var st statusReport
	if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil || st.RWLock == nil {
		t.Fatalf("status --json %v: exit %d, %v, stdout %q, stderr %q; want 0 and a report with rwlock", args, code, err, stdout, stderr)
	}
	return st
}

// wantRW checks the read-write lock that st reports.
func wantRW(t *testing.T, what string, st statusReport, readers int, writer string) {
	t.Helper()
	if rw := st.RWLock; rw.Error != "" || rw.Readers == nil || *rw.Readers != readers || rw.Writer == nil || *rw.Writer != writer {
		t.Errorf("%s: rwlock %+v (readers %v, writer %v); want %d readers, writer %q", what, rw, deref(rw.Readers), deref(rw.Writer), readers, writer)
	}
	if held := st.Held; held == nil || *held {
		t.Errorf("%s: the lock's held = %v; want false: the read-write lock is apart from it", what, held)
	}
}

// wantHolders checks that holders are exactly those of the lockctl runs
// ps, in any order: a run's holder name has its pid second.
func wantHolders(t *testing.T, what string, holders []string, ps ...*proc) {
	t.Helper()
	var got, want []string
	for _, h := range holders {
		if f := strings.Fields(h); len(f) > 1 {
			got = append(got, f[1])
		}
	}
	for _, p := range ps {
		want = append(want, strconv.Itoa(p.cmd.Process.Pid))
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(got) != len(holders) || !slices.Equal(got, want) {
		t.Errorf("%s: %q; want the holders of the runs with pids %v", what, holders, want)
	}
}

// wantHolderRows checks that status's text output has a TAKEN AS table
// whose rows of kind are the lockctl runs ps, aligned under HOLDER.
func wantHolderRows(t *testing.T, what, stdout, kind string, ps ...*proc) {
	t.Helper()
	lines := strings.Split(stdout, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  TAKEN AS") })
	if i < 0 {
		t.Errorf("%s: %q has no TAKEN AS table", what, stdout)
		return
	}
	col := strings.Index(lines[i], "HOLDER")
	var holders []string
	for _, row := range lines[i+1:] {
		if !strings.HasPrefix(row, "  "+kind+" ") {
			continue
		}
		if len(row) <= col || row[col-1] != ' ' || row[col] == ' ' {
			t.Errorf("%s: row %q is not aligned under HOLDER in %q", what, row, lines[i])
			continue
		}
		holders = append(holders, row[col:])
	}
	wantHolders(t, what+": "+kind+" rows", holders, ps...)
}

func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}
