package main

import (
	"encoding/json"
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
		code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "-n", "3"}, b.flags()...), "builds")...)
		if code != 0 || !strings.Contains(stdout, "permits: 2 of 3 held, 1 free") {
			t.Errorf("status -n 3 with two permits held: exit %d, stdout %q, stderr %q; want 0 and 2 of 3 held", code, stdout, stderr)
		}
		code, stdout, _ = lockctl(t, nil, append(append([]string{"status", "--json", "-n", "2"}, b.flags()...), "builds")...)
		var st statusReport
		if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil || st.Permits == nil || st.Permits.Held == nil || *st.Permits.Held != 2 || *st.Permits.Free != 0 {
			t.Errorf("status --json -n 2 with two permits held: exit %d, %v, %s; want permits held 2, free 0", code, err, stdout)
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
		code, _, stderr := lockctl(t, nil, append(append([]string{"run"}, exclusive...), "dataset", "--", "true")...)
		if code != exitConflict || !strings.Contains(stderr, `"dataset" is held by another owner`) {
			t.Errorf("run --exclusive while readers are in: exit %d, stderr %q; want %d and a message", code, stderr, exitConflict)
		}

		w := s.run("w", append([]string{"--wait", "1m", "--verbose"}, exclusive...), "dataset", "WAIT=1", "SLOTS=1")
		w.stderr.waitFor(t, "waiting", 30*time.Second)
		s.finish("r1")
		s.finish("r2")
		for name, p := range map[string]*proc{"r1": r1, "r2": r2} {
			if code := p.wait(t, 30*time.Second); code != 0 {
				t.Errorf("%s run: exit %d; stderr %s", name, code, p.stderr)
			}
		}
		s.ready("w")
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
