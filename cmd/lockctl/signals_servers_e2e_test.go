package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// sigIgnScript prints the set of signals the shell running it ignores.
const sigIgnScript = `grep SigIgn /proc/self/status`

// The command lockctl run starts keeps the signal dispositions it would
// have had without lockctl: lockctl ignoring Ctrl-Z for itself must not
// leave SIGTSTP ignored in the command and in everything it starts (an
// ignored signal stays ignored across exec).
func TestCommandInheritsNoIgnoredSignal(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	direct := exec.Command("sh", "-c", sigIgnScript)
	direct.Env = baseEnv()
	want, err := direct.Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", sigIgnScript, err)
	}
	code, got, stderr := lockctl(t, nil, "run", "--store", "memory://", "r", "--", "sh", "-c", sigIgnScript)
	if code != 0 {
		t.Fatalf("lockctl run: exit %d; stderr %s", code, stderr)
	}
	if got != string(want) {
		t.Errorf("under lockctl run the command's %q; want %q as without lockctl (stderr %s)", strings.TrimSpace(got), strings.TrimSpace(string(want)), stderr)
	}
}

// lockctl, whose command has a process group of its own, is not stopped
// by SIGTSTP: stopped, it could not extend the lock. A lockctl stopped
// would not pass on the SIGUSR1 that follows.
func TestRunNotStoppedBySIGTSTP(t *testing.T) {
	s := newScene(t)
	p := s.run("cmd", []string{"--store", "memory://"}, "tstp", "WAIT=1")
	s.ready("cmd")
	for _, sig := range []syscall.Signal{syscall.SIGTSTP, syscall.SIGUSR1} {
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "the command did not get the SIGUSR1 sent after a SIGTSTP: lockctl stopped", func() bool {
		return slices.Contains(s.signals("cmd"), syscall.SIGUSR1.String())
	})
	s.finish("cmd")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("run after SIGTSTP: exit %d; want 0; stderr %s", code, p.stderr)
	}
}

// One server named twice in a Redlock, in two spellings of its URL, is
// refused as a usage error before anything is sent: the "Redlock" would
// count one server's answer as several, and three spellings of one free
// server answered "held by another owner".
func TestOneServerTwice(t *testing.T) {
	srv := redistest.Start(t)
	host, port, _ := strings.Cut(srv.Addr(), ":")
	spellings := []string{"redis://" + srv.Addr(), "redis://" + srv.Addr() + "/0", "redis://" + strings.ToUpper(host) + ":" + port + "?name=again"}
	var flags []string
	for _, u := range spellings {
		flags = append(flags, "--store", u)
	}
	code, _, stderr := lockctl(t, nil, append(append([]string{"run"}, flags...), "free", "--", "true")...)
	if code != exitUsage || !strings.Contains(stderr, "one server") {
		t.Errorf("run over one server spelt three ways: exit %d, stderr %q; want %d and a message that they are one server", code, stderr, exitUsage)
	}

	// Refused before connecting: nothing listens on these.
	for _, tc := range [][]string{
		{"redis://127.0.0.1:1", "redis://127.0.0.1:1/2", "redis://127.0.0.2:1"},
		{"memcache://127.0.0.1:1", "memcache://127.0.0.1:1?prefix=b:", "memcache://127.0.0.2:1"},
		{"redis+cluster://127.0.0.3:1,127.0.0.1:1", "redis://127.0.0.1:1", "redis://127.0.0.2:1"},
		{"etcd://127.0.0.1:1,127.0.0.2:1", "etcd://127.0.0.2:1", "etcd://127.0.0.3:1"},
		{"unix:///tmp/no-such-redis.sock", "unix:///tmp/no-such-redis.sock?db=1", "redis://127.0.0.2:1"},
		{"postgres://127.0.0.1:1/a", "postgres://u@127.0.0.1:1/b", "postgres://127.0.0.2:1/a"},
	} {
		var flags []string
		for _, u := range tc {
			flags = append(flags, "--store", u)
		}
		code, _, stderr := lockctl(t, nil, append(append([]string{"status"}, flags...), "r")...)
		if code != exitUsage || !strings.Contains(stderr, "one server") {
			t.Errorf("status --store %s: exit %d, stderr %q; want %d and a message that two are one server", strings.Join(tc, " --store "), code, stderr, exitUsage)
		}
	}

	// Distinct servers, and the Sentinels of different masters, stay
	// accepted (nothing listens: the stores cannot be reached, status 1).
	for _, tc := range [][]string{
		{"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.2:1"},
		{"redis+sentinel://127.0.0.1:1/a", "redis+sentinel://127.0.0.1:1/b", "redis+sentinel://127.0.0.1:1/c"},
	} {
		var flags []string
		for _, u := range tc {
			flags = append(flags, "--store", u)
		}
		code, _, stderr := lockctl(t, nil, append(append([]string{"status", "--timeout", "2s", "--store-timeout", "100ms"}, flags...), "r")...)
		if code == exitUsage {
			t.Errorf("status --store %s: exit %d, stderr %q; want the stores tried", strings.Join(tc, " --store "), code, stderr)
		}
	}
}
