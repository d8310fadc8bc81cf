package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// acquire, extend and release --lock hold a lock across processes, as the
// steps of a CI job do: the library sees it held in between, other owners
// are kept out, and the lock file is private to its owner.
func TestAcquireExtendRelease(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		locker := b.locker(t)
		file := filepath.Join(t.TempDir(), "job.lock")
		cmd := func(args ...string) (int, string, string) {
			t.Helper()
			return lockctl(t, nil, append(append(args[:1:1], b.flags()...), args[1:]...)...)
		}
		readFile := func() lock.Lock {
			t.Helper()
			data, err := os.ReadFile(file)
			var l lock.Lock
			if err == nil {
				err = json.Unmarshal(data, &l)
			}
			if err != nil {
				t.Fatalf("the lock file: %v (%q)", err, data)
			}
			return l
		}

		code, stdout, stderr := cmd("acquire", "--ttl", "20s", "--lock", file, "ci/deploy")
		if code != 0 || stdout != "" {
			t.Fatalf("acquire --lock: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		fi, err := os.Stat(file)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the lock file: %v, mode %v; want 0600", err, fi.Mode().Perm())
		}
		l := readFile()
		if l.Resource != "ci/deploy" || l.Token == "" || time.Until(l.ValidUntil) <= 0 || time.Until(l.ValidUntil) > 20*time.Second || (b.fences && l.Fence == 0) {
			t.Fatalf("the lock file holds %+v", l)
		}
		if held, err := locker.IsLocked(ctx, "ci/deploy"); err != nil || !held {
			t.Fatalf("IsLocked after acquire = %v, %v; want held", held, err)
		}
		if _, err := locker.TryLock(ctx, "ci/deploy", 10*time.Second); !errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("the library's TryLock while acquired = %v; want ErrNotAcquired", err)
		}
		if code, _, stderr := cmd("acquire", "--lock", filepath.Join(t.TempDir(), "other.lock"), "ci/deploy"); code != exitConflict || !strings.Contains(stderr, `"ci/deploy" is held by another owner`) {
			t.Errorf("a second acquire: exit %d, stderr %q; want %d", code, stderr, exitConflict)
		}
		// A lock file that exists is never overwritten, and nothing is taken.
		if code, _, stderr := cmd("acquire", "--lock", file, "ci/other"); code != exitFailure || !strings.Contains(stderr, file+" exists") {
			t.Errorf("acquire onto an existing lock file: exit %d, stderr %q", code, stderr)
		}
		if held, _ := locker.IsLocked(ctx, "ci/other"); held {
			t.Error("acquire onto an existing lock file took the lock")
		}

		code, _, stderr = cmd("extend", "--ttl", "50s", "--lock", file)
		if code != 0 || stderr != "" {
			t.Fatalf("extend: exit %d, stderr %q", code, stderr)
		}
		if next := readFile(); next.Token != l.Token || !next.ValidUntil.After(l.ValidUntil.Add(20*time.Second)) {
			t.Errorf("after extend --ttl 50s, the file holds %+v; was %+v", next, l)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("the lock file after extend: %v, mode %v; want 0600", err, fi.Mode().Perm())
		}

		code, stdout, stderr = cmd("release", "--lock", file)
		if code != 0 || stdout != "" || stderr != "" {
			t.Fatalf("release --lock: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the lock file after release: %v; want it removed", err)
		}
		if held, err := locker.IsLocked(ctx, "ci/deploy"); err != nil || held {
			t.Errorf("IsLocked after release --lock = %v, %v; want free", held, err)
		}
		if code, _, stderr := cmd("release", "--lock", file); code != exitUsage || !strings.Contains(stderr, "no such file") {
			t.Errorf("release of a removed lock file: exit %d, stderr %q; want %d (a bad --lock, not a store's failure)", code, stderr, exitUsage)
		}
	})
}

// Without --lock the lock goes to stdout, and --lock - reads it on stdin;
// a lock lost in between makes extend and release exit 76; the library
// releases a lock that acquire printed.
func TestAcquireOnStdout(t *testing.T) {
	srvFlags, locker := redisBackend(t)
	ctx := t.Context()
	code, out, stderr := lockctl(t, nil, append(append([]string{"acquire"}, srvFlags...), "nightly")...)
	var l lock.Lock
	if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil || l.Resource != "nightly" || l.Fence == 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("acquire: exit %d, stdout %q (%v), stderr %q; want one line of JSON", code, out, err, stderr)
	}
	// extend --lock - prints the extended lock.
	code, next, stderr := lockctlIn(t, out, append(append([]string{"extend", "--lock", "-"}, srvFlags...), "--ttl", "1h")...)
	var nl lock.Lock
	if err := json.Unmarshal([]byte(next), &nl); code != 0 || err != nil || nl.Token != l.Token || time.Until(nl.ValidUntil) < 30*time.Minute {
		t.Fatalf("extend --lock -: exit %d, stdout %q (%v), stderr %q", code, next, err, stderr)
	}
	// The library releases what lockctl acquired.
	if err := locker.Unlock(ctx, nl); err != nil {
		t.Fatalf("the library's Unlock of the lock acquire printed: %v", err)
	}
	for _, args := range [][]string{{"extend", "--lock", "-"}, {"release", "--lock", "-"}} {
		code, _, stderr := lockctlIn(t, next, append(args, srvFlags...)...)
		if code != exitLost || !strings.Contains(stderr, `the lock on "nightly" is no longer held`) {
			t.Errorf("%s of a lock released meanwhile: exit %d, stderr %q; want %d", args[0], code, stderr, exitLost)
		}
	}
}

// A lock file that others may read gets a warning; a lock lost before
// release --lock exits 76 and still removes the file.
func TestReleaseLostLockFile(t *testing.T) {
	srvFlags, locker := redisBackend(t)
	file := filepath.Join(t.TempDir(), "job.lock")
	if code, _, stderr := lockctl(t, nil, append(append([]string{"acquire", "--lock", file}, srvFlags...), "job")...); code != 0 {
		t.Fatalf("acquire: exit %d, %s", code, stderr)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(file)
	var l lock.Lock
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	if err := locker.Unlock(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := lockctl(t, nil, append([]string{"release", "--lock", file}, srvFlags...)...)
	if code != exitLost || !strings.Contains(stderr, "is open to others (mode -rw-r--r--)") {
		t.Errorf("release --lock of a lost lock in a 0644 file: exit %d, stderr %q; want %d and a warning", code, stderr, exitLost)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file of a lost lock after release: %v; want it removed", err)
	}
}

// A signal stops acquire --wait: it exits 128+n and leaves no lock file.
func TestAcquireInterrupted(t *testing.T) {
	srvFlags, locker := redisBackend(t)
	held, err := locker.TryLock(t.Context(), "busy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Unlock(context.WithoutCancel(t.Context()), held)
	file := filepath.Join(t.TempDir(), "busy.lock")
	p := start(t, nil, append(append([]string{"acquire", "--wait", "forever", "--lock", file}, srvFlags...), "busy")...)
	eventually(t, 30*time.Second, "acquire did not create its lock file", func() bool {
		_, err := os.Stat(file)
		return err == nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != exitSignal+int(syscall.SIGTERM) || !strings.Contains(p.stderr.String(), `interrupted by SIGTERM while waiting for "busy"`) {
		t.Errorf("acquire interrupted: exit %d, stderr %s; want %d", code, p.stderr, exitSignal+int(syscall.SIGTERM))
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file of an interrupted acquire: %v; want none", err)
	}
}

// redisBackend starts one Redis server and returns its --store flags and
// a locker of the library over it.
func redisBackend(t *testing.T) ([]string, lock.Locker) {
	b := backends[0].start(t)
	if b.name != "redis" {
		t.Fatalf("backends[0] is %s; want redis", b.name)
	}
	return b.flags(), b.locker(t)
}
