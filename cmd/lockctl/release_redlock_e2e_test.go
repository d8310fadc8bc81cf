package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// release --lock on a Redlock waits, within --timeout, for every store the
// lock file records to confirm the release. Unlock succeeds once a quorum
// released the lock, and leaves the other stores to retries that end with
// lockctl: here the third server holds back writes (CLIENT PAUSE WRITE)
// past --timeout, so release must exit 1, name it, and keep FILE for
// another try, which, once the server answers, frees it there too and
// exits 0: FILE recorded that a quorum had released the lock, so the
// first two stores' "not held" is expected (it exited 76, as for a lock
// lost before its release).
func TestReleaseRedlockWaitsForEveryStore(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartN(t, 3)
	file := filepath.Join(t.TempDir(), "p.lock")
	var stores []string
	for _, s := range srvs {
		stores = append(stores, "--store", "redis://"+s.Addr())
	}
	if code, _, stderr := lockctl(t, nil, append([]string{"acquire", "--ttl", "1m", "--lock", file}, append(stores, "p")...)...); code != exitOK {
		t.Fatalf("acquire: exit %d, %s", code, stderr)
	}
	if err := srvs[2].ClientPause(time.Minute, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srvs[2].ClientUnpause() })

	release := append([]string{"release", "--lock", file, "--timeout", "2s"}, stores...)
	code, _, stderr := lockctl(t, nil, release...)
	if code != exitFailure || !strings.Contains(stderr, srvs[2].Addr()) || strings.Contains(stderr, srvs[0].Addr()) {
		t.Errorf("release with the third store holding back writes: exit %d, stderr %q; want 1, naming %s only", code, stderr, srvs[2].Addr())
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("release with a store that did not confirm removed the lock file: %v", err)
	}
	third := redisStore(t, srvs[2])
	if held, err := third.Exists(t.Context(), "p"); err != nil || !held {
		t.Fatalf("third store: Exists(p) = %v, %v; want true, as its release was held back", held, err)
	}

	// FILE records the quorum's release: extend says so, before it sends
	// anything (it said the lock may have been taken over).
	extend := append([]string{"extend", "--lock", file, "--timeout", "2s"}, stores...)
	if code, _, stderr := lockctl(t, nil, extend...); code != exitLost || !strings.Contains(stderr, "run release --lock again") {
		t.Errorf("extend of a lock released on a quorum: exit %d, stderr %q; want %d, pointing to release --lock", code, stderr, exitLost)
	}

	if err := srvs[2].ClientUnpause(); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = lockctl(t, nil, release...)
	if code != exitOK {
		t.Errorf("release again, once the third store answers: exit %d, stderr %q; want 0 (the lock is released on every store, the first two by the first release)", code, stderr)
	}
	if held, err := third.Exists(t.Context(), "p"); err != nil || held {
		t.Errorf("third store after another release: Exists(p) = %v, %v; want false", held, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("lock file after another release: %v; want it removed", err)
	}
}

// run and elect say on stderr which store did not confirm the final
// release, and exit with the command's status all the same: the command
// pauses the third server's writes (CLIENT
// PAUSE WRITE), so its release cannot land before lockctl exits.
func TestRunElectRedlockUnconfirmedRelease(t *testing.T) {
	t.Parallel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not found")
	}
	for _, tc := range []struct {
		name, exit string
		code       int
	}{
		{"run", "0", exitOK},
		{"run", "3", 3},
		{"elect", "0", exitOK},
		{"elect", "3", 3},
	} {
		t.Run(tc.name+"/exit"+tc.exit, func(t *testing.T) {
			t.Parallel()
			srvs := redistest.StartN(t, 3)
			t.Cleanup(func() { _ = srvs[2].ClientUnpause() })
			_, port, _ := net.SplitHostPort(srvs[2].Addr())
			args := []string{tc.name}
			for _, s := range srvs {
				args = append(args, "--store", "redis://"+s.Addr())
			}
			pause := cli + " -p " + port + " client pause 60000 WRITE >/dev/null && exit " + tc.exit
			code, _, stderr := lockctl(t, nil, append(args, "r", "--", "sh", "-c", pause)...)
			if code != tc.code || !strings.Contains(stderr, srvs[2].Addr()) || strings.Contains(stderr, srvs[0].Addr()) || !strings.Contains(stderr, "did not confirm the release") {
				t.Errorf("%s, the command exiting %s: exit %d, stderr %q; want %d, naming %s only", tc.name, tc.exit, code, stderr, tc.code, srvs[2].Addr())
			}
		})
	}
}

// run and elect over a Redlock whose stores all release exit with the
// command's status and say nothing, a store down from the start included:
// lockctl never reached it, so it holds nothing.
func TestRunElectRedlockConfirmedRelease(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartN(t, 2)
	for _, name := range []string{"run", "elect"} {
		args := []string{name, "--store", "redis://" + srvs[0].Addr(), "--store", "redis://" + srvs[1].Addr(), "--store", "redis://" + closedPort(t)}
		code, _, stderr := lockctl(t, nil, append(args, "r-"+name, "--", "true")...)
		if code != exitOK || strings.Contains(stderr, "did not confirm") {
			t.Errorf("%s over two stores and one down: exit %d, stderr %q; want 0, without a word on the release", name, code, stderr)
		}
	}
}
