package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// Two invocations on one resource never run their commands at once: the
// second fails at once with the conflict status, or waits for the first
// and then runs.
func TestRunSerialises(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newScene(t)
		first := s.run("first", b.flags(), "job", "WAIT=1")
		s.ready("first")

		code, _, stderr := lockctl(t, nil, append(append([]string{"run"}, b.flags()...), "job", "--", "true")...)
		if code != exitConflict || !strings.Contains(stderr, `"job" is held by another owner`) {
			t.Errorf("run --wait 0 while held: exit %d, stderr %q; want %d and a message", code, stderr, exitConflict)
		}
		code, _, stderr = lockctl(t, nil, append(append([]string{"run", "--quiet", "--conflict-exit-code", "9"}, b.flags()...), "job", "--", "true")...)
		if code != 9 || stderr != "" {
			t.Errorf("run --quiet --conflict-exit-code 9 while held: exit %d, stderr %q; want 9 and nothing", code, stderr)
		}
		code, _, stderr = lockctl(t, nil, append(append([]string{"run", "--wait", "300ms"}, b.flags()...), "job", "--", "true")...)
		if code != exitConflict || !strings.Contains(stderr, "(waited 300ms)") {
			t.Errorf("run --wait 300ms while held: exit %d, stderr %q; want %d, waited", code, stderr, exitConflict)
		}

		second := s.run("second", append([]string{"--wait", "1m", "--verbose"}, b.flags()...), "job")
		second.stderr.waitFor(t, "waiting", 30*time.Second)
		if s.started("second") {
			t.Fatal("the second command started while the first held the lock")
		}
		s.finish("first")
		if code := first.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("first run: exit %d; stderr %s", code, first.stderr)
		}
		if code := second.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("second run: exit %d; stderr %s", code, second.stderr)
		}
		if log, want := s.log(), []string{"start first", "end first", "start second", "end second"}; !slices.Equal(log, want) {
			t.Fatalf("log = %q; want %q", log, want)
		}
	})
}

// run exits with its command's status, and reports commands it cannot
// start as shells do.
func TestRunExitStatus(t *testing.T) {
	s := newScene(t)
	flags := []string{"--store", "memory://"}
	for _, tc := range []struct {
		id   string
		opts []string
		want int
	}{
		{"zero", nil, 0},
		{"seven", []string{"EXIT=7"}, 7},
		{"killed", []string{"SELF_KILL=1"}, 128 + int(syscall.SIGKILL)},
	} {
		p := s.run(tc.id, flags, "r", tc.opts...)
		if code := p.wait(t, time.Minute); code != tc.want {
			t.Errorf("run of a command exiting as %s: exit %d; want %d; stderr %s", tc.id, code, tc.want, p.stderr)
		}
	}
	code, _, stderr := lockctl(t, nil, "run", "--store", "memory://", "r", "--", "/nonexistent/command")
	if code != exitNotFound || !strings.Contains(stderr, "cannot run /nonexistent/command") {
		t.Errorf("run of a missing command: exit %d, stderr %q; want %d", code, stderr, exitNotFound)
	}
	code, _, stderr = lockctl(t, nil, "run", "--store", "memory://", "r", t.TempDir())
	if code != exitNoExec {
		t.Errorf("run of a directory: exit %d, stderr %q; want %d", code, stderr, exitNoExec)
	}
}

// When the lock is lost while the command runs (here an operator forces
// its release), the command gets SIGTERM, and SIGKILL if it ignores it,
// and lockctl exits with the lost status.
func TestRunLost(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newScene(t)
		p := s.run("polite", append([]string{"--ttl", "3s", "--kill-after", "1m"}, b.flags()...), "lost", "WAIT=1")
		s.ready("polite")
		code, stdout, stderr := lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), "lost")...)
		if code != 0 || !strings.HasPrefix(stdout, "lost: released") {
			t.Fatalf("release --force: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if code := p.wait(t, 30*time.Second); code != exitLost {
			t.Fatalf("run whose lock was released by force: exit %d; want %d; stderr %s", code, exitLost, p.stderr)
		}
		if sigs := s.signals("polite"); !slices.Equal(sigs, []string{"terminated"}) {
			t.Errorf("the command got %q; want SIGTERM", sigs)
		}
		if !strings.Contains(p.stderr.String(), `lost the lock on "lost"`) {
			t.Errorf("stderr %q does not say the lock was lost", p.stderr)
		}

		p = s.run("stubborn", append([]string{"--ttl", "3s", "--kill-after", "1s"}, b.flags()...), "lost", "WAIT=1", "ON_TERM=ignore")
		pid, _ := s.ready("stubborn")
		if code, _, stderr := lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), "lost")...); code != 0 {
			t.Fatalf("release --force: exit %d, stderr %q", code, stderr)
		}
		if code := p.wait(t, 30*time.Second); code != exitLost {
			t.Fatalf("run whose command ignores SIGTERM: exit %d; want %d; stderr %s", code, exitLost, p.stderr)
		}
		if alive(pid) {
			t.Error("the command that ignored SIGTERM still runs")
		}
		if sigs := s.signals("stubborn"); !slices.Equal(sigs, []string{"terminated"}) || !strings.Contains(p.stderr.String(), "SIGKILL") {
			t.Errorf("signals %q, stderr %q; want SIGTERM, then SIGKILL reported", sigs, p.stderr)
		}

		s.forget("stubborn") // killed, it left its mark of being inside

		// A loss that the release finds, the command having exited before
		// the next extension (due in 10s): it may have run without the lock.
		p = s.run("quick", append([]string{"--ttl", "30s"}, b.flags()...), "lost", "WAIT=1")
		s.ready("quick")
		if code, _, stderr := lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), "lost")...); code != 0 {
			t.Fatalf("release --force: exit %d, stderr %q", code, stderr)
		}
		s.finish("quick")
		if code := p.wait(t, 30*time.Second); code != exitLost || !strings.Contains(p.stderr.String(), "may have run without the lock") {
			t.Fatalf("run whose lock was released by force before its command exited: exit %d, stderr %s; want %d", code, p.stderr, exitLost)
		}
	})
}

// When the lock is lost, what the command started gets the kill after
// --kill-after too, even if the command itself exited on SIGTERM: nothing
// it started runs on without the lock (its process group's own).
func TestRunLostKillsWhatTheCommandStarted(t *testing.T) {
	be := backends[0].start(t)
	s := newScene(t)
	p := s.run("cmd", append([]string{"--ttl", "3s", "--kill-after", "1s"}, be.flags()...), "lost-group", "WAIT=1", "CHILD=ignore")
	s.ready("cmd")
	child := s.child("cmd")
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if code, _, stderr := lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, be.flags()...), "lost-group")...); code != 0 {
		t.Fatalf("release --force: exit %d, stderr %q", code, stderr)
	}
	if code := p.wait(t, 30*time.Second); code != exitLost {
		t.Fatalf("run whose lock was released by force: exit %d; want %d; stderr %s", code, exitLost, p.stderr)
	}
	if sigs := s.signals("cmd"); !slices.Equal(sigs, []string{"terminated"}) {
		t.Errorf("the command got %q; want SIGTERM", sigs)
	}
	eventually(t, 10*time.Second, "a process the command started, which ignores SIGTERM, runs on after the lock was lost and lockctl exited", func() bool { return !alive(child) })
}

// Signals sent to lockctl reach the command, which runs in a process
// group of its own; the lock is released once it exits.
func TestRunForwardsSignals(t *testing.T) {
	be := backends[0].start(t)
	s := newScene(t)
	p := s.run("cmd", be.flags(), "sig", "WAIT=1")
	pid, _ := s.ready("cmd")
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("the command's process group is %d (%v); want its own, %d", pgid, err, pid)
	}
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGHUP, syscall.SIGINT} {
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the command did not get "+sig.String(), func() bool {
			return slices.Contains(s.signals("cmd"), sig.String())
		})
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("run whose command exits on SIGTERM: exit %d; want %d; stderr %s", code, 128+int(syscall.SIGTERM), p.stderr)
	}
	if want := []string{"user defined signal 1", "hangup", "interrupt", "terminated"}; !slices.Equal(s.signals("cmd"), want) {
		t.Errorf("signals = %q; want %q", s.signals("cmd"), want)
	}
	if code, stdout, _ := lockctl(t, nil, append(append([]string{"status"}, be.flags()...), "sig")...); code != 0 || !strings.HasPrefix(stdout, "sig: free") {
		t.Errorf("status after the command exited: exit %d, %q; want free", code, stdout)
	}
}

// A signal passed on to a command stopped in its own group (a background
// read of the terminal stops it with SIGTTIN) is followed by SIGCONT, so
// that the command acts on it: a stopped command used to keep the lock,
// and lockctl, until someone continued it by hand.
func TestRunSignalReachesAStoppedCommand(t *testing.T) {
	be := backends[0].start(t)
	s := newScene(t)
	p := s.run("cmd", be.flags(), "stopped", "WAIT=1")
	pid, _ := s.ready("cmd")
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("run whose stopped command exits on SIGTERM: exit %d; want %d; stderr %s", code, 128+int(syscall.SIGTERM), p.stderr)
	}
	if code, stdout, _ := lockctl(t, nil, append(append([]string{"status"}, be.flags()...), "stopped")...); code != 0 || !strings.HasPrefix(stdout, "stopped: free") {
		t.Errorf("status after the command exited: exit %d, %q; want free", code, stdout)
	}
}

// A signal while waiting for the lock stops waiting: the command never
// starts, and lockctl exits with 128+n.
func TestRunInterruptedWhileWaiting(t *testing.T) {
	be := backends[0].start(t)
	s := newScene(t)
	holder := s.run("holder", be.flags(), "busy", "WAIT=1")
	s.ready("holder")
	waiter := s.run("waiter", append([]string{"--wait", "forever", "--verbose"}, be.flags()...), "busy")
	waiter.stderr.waitFor(t, "waiting", 30*time.Second)
	if err := waiter.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := waiter.wait(t, 30*time.Second); code != 128+int(syscall.SIGINT) || !strings.Contains(waiter.stderr.String(), "interrupted") {
		t.Fatalf("waiting run interrupted: exit %d, stderr %s; want %d", code, waiter.stderr, 128+int(syscall.SIGINT))
	}
	if s.started("waiter") {
		t.Error("the interrupted run started its command")
	}
	s.finish("holder")
	if code := holder.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("holder: exit %d", code)
	}
}

// --fence-env passes the lock's fence, the one status shows, and fences
// grow from one run to the next.
func TestRunFence(t *testing.T) {
	be := backends[0].start(t)
	s := newScene(t)
	flags := append([]string{"--fence-env", "LOCK_FENCE"}, be.flags()...)
	p := s.run("one", flags, "fenced", "WAIT=1", "FENCE_ENV=LOCK_FENCE")
	_, f1 := s.ready("one")
	fence1, err := strconv.ParseUint(f1, 10, 64)
	if err != nil || fence1 == 0 {
		t.Fatalf("the command got fence %q; want a number", f1)
	}
	code, stdout, _ := lockctl(t, nil, append(append([]string{"status", "--json"}, be.flags()...), "fenced")...)
	var st statusReport
	if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v: %s", code, err, stdout)
	}
	if st.Held == nil || !*st.Held || st.Stores[0].LastFence == nil || *st.Stores[0].LastFence != fence1 {
		t.Errorf("status while held = %s; want held with last fence %d", stdout, fence1)
	}
	s.finish("one")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d; stderr %s", code, p.stderr)
	}
	p = s.run("two", flags, "fenced", "FENCE_ENV=LOCK_FENCE")
	_, f2 := s.ready("two")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d; stderr %s", code, p.stderr)
	}
	if fence2, err := strconv.ParseUint(f2, 10, 64); err != nil || fence2 <= fence1 {
		t.Errorf("second fence %q; want a number above %d", f2, fence1)
	}
}

// On Linux the command dies with lockctl: nothing would extend its lock.
func TestRunCommandDiesWithLockctl(t *testing.T) {
	if !hasDeathSignal {
		t.Skip("only Linux kills a child when its parent dies")
	}
	be := backends[0].start(t)
	s := newScene(t)
	p := s.run("orphan", be.flags(), "die", "WAIT=1", "ON_TERM=ignore")
	pid, _ := s.ready("orphan")
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 30*time.Second)
	eventually(t, 10*time.Second, "the command outlived lockctl", func() bool { return !alive(pid) })
}

// A Redlock runs on when a minority of its stores cannot be reached, and
// says so; status shows what each store answered.
func TestRunRedlockMinorityDown(t *testing.T) {
	srvs := redistest.StartN(t, 2)
	down := closedPort(t)
	flags := []string{"--store", "redis://" + srvs[0].Addr(), "--store", "redis://" + down, "--store", "redis://" + srvs[1].Addr(), "--store-timeout", storeTimeout.String()}
	s := newScene(t)
	p := s.run("cmd", flags, "minority", "WAIT=1")
	s.ready("cmd")
	code, stdout, _ := lockctl(t, nil, append(append([]string{"status"}, flags...), "minority")...)
	if code != 0 || !strings.HasPrefix(stdout, "minority: held by ") || strings.Count(stdout, "  held") != 2 || !strings.Contains(stdout, "connection refused") {
		t.Errorf("status with a store down: exit %d, %q; want held on two stores and the third's error", code, stdout)
	}
	s.finish("cmd")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("run with one of three stores down: exit %d; stderr %s", code, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "warning: store redis://"+down) {
		t.Errorf("stderr %q does not warn about the store that is down", p.stderr)
	}
	// Free on the stores that answer, unknown on the other: status cannot
	// say the lock is free.
	code, stdout, _ = lockctl(t, nil, append(append([]string{"status", "--json"}, flags...), "minority")...)
	if code != exitFailure || !strings.Contains(stdout, `"held": null`) {
		t.Errorf("status --json of a free lock with a store down: exit %d, %s; want 1 and held null", code, stdout)
	}
}

// A Redlock of stores that raise their fences keeps fencing with one of
// them unreachable from the start: --fence-env is not refused as if the
// stores could not fence, and the command gets a fence above the last.
func TestRunFenceRedlockMinorityDown(t *testing.T) {
	srvs := redistest.StartN(t, 2)
	flags := []string{"--fence-env", "LOCK_FENCE", "--store", "redis://" + srvs[0].Addr(), "--store", "redis://" + closedPort(t), "--store", "redis://" + srvs[1].Addr(), "--store-timeout", storeTimeout.String()}
	s := newScene(t)
	var last uint64
	for _, name := range []string{"one", "two"} {
		p := s.run(name, flags, "fenced", "FENCE_ENV=LOCK_FENCE")
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("%s: run --fence-env on a Redlock of Redis servers, one of three down: exit %d; want 0; stderr %s", name, code, p.stderr)
		}
		_, f := s.ready(name)
		fence, err := strconv.ParseUint(f, 10, 64)
		if err != nil || fence <= last {
			t.Fatalf("%s: the command got fence %q; want a number above %d", name, f, last)
		}
		last = fence
	}
}

// --fence-env also works on memcached and on a Redlock whose stores all
// raise their fences, and fences grow from one run to the next there too.
func TestRunFenceMemcacheAndRedlock(t *testing.T) {
	for _, be := range backends {
		if be.name != "memcache" && be.name != "redlock" {
			continue
		}
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			b := be.start(t)
			s := newScene(t)
			flags := append([]string{"--fence-env", "LOCK_FENCE"}, b.flags()...)
			var last uint64
			for _, name := range []string{"one", "two"} {
				p := s.run(name, flags, "fenced", "FENCE_ENV=LOCK_FENCE")
				_, f := s.ready(name)
				if code := p.wait(t, 30*time.Second); code != 0 {
					t.Fatalf("%s: exit %d; stderr %s", name, code, p.stderr)
				}
				fence, err := strconv.ParseUint(f, 10, 64)
				if err != nil || fence <= last {
					t.Fatalf("%s: the command got fence %q; want a number above %d", name, f, last)
				}
				last = fence
			}
		})
	}
}

// A store that becomes unreachable while the command runs: extensions
// fail until the lock runs out, and then the command gets SIGTERM and
// lockctl exits 76.
func TestRunStoreGoneWhileRunning(t *testing.T) {
	srv := redistest.Start(t)
	s := newScene(t)
	p := s.run("cmd", []string{"--ttl", "3s", "--store", "redis://" + srv.Addr()}, "gone", "WAIT=1")
	s.ready("cmd")
	srv.Close()
	if code := p.wait(t, 30*time.Second); code != exitLost {
		t.Fatalf("run whose store went away: exit %d; want %d; stderr %s", code, exitLost, p.stderr)
	}
	if sigs := s.signals("cmd"); !slices.Equal(sigs, []string{"terminated"}) {
		t.Errorf("the command got %q; want SIGTERM", sigs)
	}
	if !strings.Contains(p.stderr.String(), `lost the lock on "gone" while the command ran`) {
		t.Errorf("stderr %q does not say the lock was lost", p.stderr)
	}
}
