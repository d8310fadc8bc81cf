package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// extend makes the file it renames over FILE before it extends the lock:
// run where it can read FILE but not write its directory, it fails (exit
// 1) with the lock's TTL as acquire set it and FILE unchanged, rather than
// extending the lock and leaving FILE with a validity that is no longer
// the lock's. lockctl runs as the unprivileged user nobody when the test
// runs as root, which permissions do not stop.
func TestExtendInUnwritableDirLeavesTheLockAsRecorded(t *testing.T) {
	srv := redistest.Start(t)
	store := "redis://" + srv.Addr()
	dir := t.TempDir()
	file := filepath.Join(dir, "job.lock")
	if code, _, stderr := lockctl(t, nil, "acquire", "--store", store, "--ttl", "1m", "--lock", file, "job/unwritable"); code != exitOK {
		t.Fatalf("acquire: exit %d, stderr %q", code, stderr)
	}
	recorded, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "extend", "--store", store, "--ttl", "1h", "--lock", file)
	cmd.Env = baseEnv()
	if os.Geteuid() == 0 {
		const nobody = 65534
		// nobody reads FILE and runs the binary, through directories it
		// may enter, and cannot create a file in dir.
		for _, d := range []string{dir, filepath.Dir(dir), filepath.Dir(bin)} {
			mustChmod(t, d, 0o755)
		}
		if err := os.Chown(file, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	} else {
		mustChmod(t, dir, 0o555)
	}
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitFailure {
		t.Fatalf("extend with FILE's directory unwritable: exit %d (%v), output %q; want %d", code, err, out, exitFailure)
	}
	if !strings.Contains(string(out), dir) {
		t.Errorf("extend's error %q does not name the directory %s", out, dir)
	}
	remaining, held, err := redisStore(t, srv).TTL(t.Context(), "job/unwritable")
	if err != nil || !held || remaining > time.Minute {
		t.Errorf("TTL after the failed extend = %v, %v, %v; want held with at most the 1m acquire set (not extended to 1h)", remaining, held, err)
	}
	if now, err := os.ReadFile(file); err != nil || string(now) != string(recorded) {
		t.Errorf("FILE after the failed extend: %q, %v; want it as acquire wrote it, %q", now, err, recorded)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*")); len(leftovers) != 0 {
		t.Errorf("extend left %q in FILE's directory", leftovers)
	}
}

// mustChmod sets the mode of path, and sets it back when the test ends.
func mustChmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, fi.Mode().Perm()) })
}

// extend records the lock in a file of its own next to FILE, renamed over
// it: a FILE whose name is as long as a name can be (255 bytes) is
// extended as any other, though the staged file's name could not repeat
// it whole.
func TestExtendLockFileWithLongestName(t *testing.T) {
	srv := redistest.Start(t)
	store := "redis://" + srv.Addr()
	file := filepath.Join(t.TempDir(), strings.Repeat("l", 250)+".lock")
	if code, _, stderr := runCLI(t, nil, "acquire", "--store", store, "--ttl", "1m", "--lock", file, "job/longname"); code != exitOK {
		t.Fatalf("acquire: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "extend", "--store", store, "--ttl", "1h", "--lock", file); code != exitOK {
		t.Fatalf("extend of a lock file named with 255 bytes: exit %d, stderr %q; want 0", code, stderr)
	}
	remaining, held, err := redisStore(t, srv).TTL(t.Context(), "job/longname")
	if err != nil || !held || remaining <= time.Minute {
		t.Errorf("TTL after extend --ttl 1h = %v, %v, %v; want held beyond the 1m acquire set", remaining, held, err)
	}
	lf, err := (&app{stderr: io.Discard}).readLockFile(file)
	if err != nil || !lf.ValidUntil.After(time.Now().Add(time.Minute)) {
		t.Errorf("FILE after extend --ttl 1h: %+v, %v; want a validity beyond a minute from now", lf, err)
	}
}

// acquire --lock naming a directory says so (it said the path "exists: it
// may hold a lock still held"), as a usage error, and takes no lock.
func TestAcquireLockFileIsADirectory(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	code, _, stderr := runCLI(t, nil, "acquire", "--store", "redis://"+srv.Addr(), "--lock", dir, "job/dir")
	if code != exitUsage || !strings.Contains(stderr, "is a directory") {
		t.Errorf("acquire --lock DIR: exit %d, stderr %q; want %d, saying it is a directory", code, stderr, exitUsage)
	}
	if held, err := redisStore(t, srv).Exists(t.Context(), "job/dir"); err != nil || held {
		t.Errorf("Exists(job/dir) after acquire --lock DIR = %v, %v; want no lock", held, err)
	}
}
