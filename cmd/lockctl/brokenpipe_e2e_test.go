package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// A lockctl whose stdout or stderr is a pipe nobody reads (lockctl
// acquire | true) gets EPIPE from its writes, not SIGPIPE, which would
// kill it holding its lock: acquire releases the lock it could not
// record, as when stdout is full, run goes on and releases its lock
// when the command exits, and status, holding nothing, ends quietly.
func TestBrokenPipe(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	store := "redis://" + srv.Addr()
	locker := single(t, redisStore(t, srv))

	// closedPipe returns the write end of a pipe whose read end is closed.
	closedPipe := func(t *testing.T) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		t.Cleanup(func() { w.Close() })
		return w
	}
	// lockctl runs the binary with stdout or stderr (the other collected)
	// the write end of a closed pipe, and returns its exit status (128+n
	// if signal n killed it) and what it wrote on the other.
	lockctl := func(t *testing.T, closed string, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = baseEnv()
		var other strings.Builder
		if closed == "stdout" {
			cmd.Stdout, cmd.Stderr = closedPipe(t), &other
		} else {
			cmd.Stdout, cmd.Stderr = &other, closedPipe(t)
		}
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("lockctl %q still ran after a minute: %s", args, &other)
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("lockctl %q: %v", args, err)
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), other.String()
		}
		return cmd.ProcessState.ExitCode(), other.String()
	}
	free := func(t *testing.T, resource string) {
		t.Helper()
		l, err := locker.TryLock(t.Context(), resource, time.Minute)
		if err != nil {
			t.Fatalf("%q is not free after lockctl exited: %v", resource, err)
		}
		if err := locker.Unlock(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("acquire", func(t *testing.T) {
		code, stderr := lockctl(t, "stdout", "acquire", "--store", store, "--ttl", "5m", "pipe-res")
		want := `lockctl acquire: recording the lock on "pipe-res": write /dev/stdout: broken pipe; released the lock` + "\n"
		if code != exitFailure || stderr != want {
			t.Errorf("acquire with stdout a closed pipe: exit %d, stderr %q; want 1, %q", code, stderr, want)
		}
		free(t, "pipe-res")
	})
	t.Run("status", func(t *testing.T) {
		// lockctl status | head -1: it holds nothing, and ends quietly,
		// as a tool killed by SIGPIPE.
		code, stderr := lockctl(t, "stdout", "status", "--store", store, "status-res")
		if want := exitSignal + int(syscall.SIGPIPE); code != want || stderr != "" {
			t.Errorf("status with stdout a closed pipe: exit %d, stderr %q; want %d and nothing said", code, stderr, want)
		}
	})
	// The other commands that hold nothing once they print, and help and
	// --version, end as status does: quietly, with 141.
	for _, args := range [][]string{
		{"check", "--store", "memory://", "--workers", "2", "--duration", "100ms"},
		{"bench", "--store", "memory://", "--workers", "1", "--duration", "100ms"},
		{"release", "--force", "--yes", "--store", store, "force-res"},
		{"help"},
		{"help", "stores"},
		{"run", "--help"},
		{"--version"},
	} {
		t.Run(strings.Join(args[:1], ""), func(t *testing.T) {
			code, stderr := lockctl(t, "stdout", args...)
			if want := exitSignal + int(syscall.SIGPIPE); code != want || stderr != "" {
				t.Errorf("%q with stdout a closed pipe: exit %d, stderr %q; want %d and nothing said", args, code, stderr, want)
			}
		})
	}
	t.Run("run-stderr", func(t *testing.T) {
		// --verbose writes "acquired" on stderr while the lock is held.
		code, stdout := lockctl(t, "stderr", "run", "--verbose", "--store", store, "--ttl", "5m", "run-res", "--", "sh", "-c", "echo ran")
		if code != exitOK || stdout != "ran\n" {
			t.Errorf("run --verbose with stderr a closed pipe: exit %d, stdout %q; want 0, the command's output", code, stdout)
		}
		free(t, "run-res")
	})
	t.Run("run-stdout", func(t *testing.T) {
		// The command, writing to the pipe, dies of SIGPIPE: run releases
		// the lock and exits as the command did.
		code, stderr := lockctl(t, "stdout", "run", "--verbose", "--store", store, "--ttl", "5m", "run-res2", "--", "sh", "-c", "echo ran")
		if code != exitSignal+int(syscall.SIGPIPE) || !strings.Contains(stderr, `lockctl run: released "run-res2"`) {
			t.Errorf("run with stdout a closed pipe: exit %d, stderr %q; want %d, the lock released", code, stderr, exitSignal+int(syscall.SIGPIPE))
		}
		free(t, "run-res2")
	})
}
