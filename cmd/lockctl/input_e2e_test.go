package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Bad input is refused with a usage error naming what is wrong, before
// lockctl connects to anything: against a store nothing listens on, the
// answer is the usage error (2), not the unreachable store (1).
func TestBadInputRefusedBeforeConnecting(t *testing.T) {
	store := "redis://" + closedPort(t)
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"run", "--store", store, "", "true"}, "empty RESOURCE"},
		{[]string{"acquire", "--store", store, ""}, "empty RESOURCE"},
		{[]string{"acquire", "--store", store, "--lock", "", "r"}, `--lock "": want a FILE`},
		{[]string{"status", "--store", store, ""}, "empty RESOURCE"},
		{[]string{"release", "--force", "--yes", "--store", store, ""}, "empty RESOURCE"},
		{[]string{"elect", "--store", store, "", "true"}, "empty ROLE"},
		{[]string{"run", "--store", store, "--fence-env", "", "r", "true"}, `--fence-env "": not an environment variable name`},
		{[]string{"elect", "--store", store, "--fence-env", "", "leader", "true"}, `--fence-env "": not an environment variable name`},
		{[]string{"run", "--store", store, "--fence-env", "1BAD", "r", "true"}, `--fence-env "1BAD": not an environment variable name`},
		{[]string{"elect", "--store", store, "--fence-env", "A-B", "leader", "true"}, `--fence-env "A-B": not an environment variable name`},
		{[]string{"elect", "--store", store, "--ttl", "-1s", "leader", "true"}, "--ttl -1s: want a positive duration"},
		{[]string{"elect", "--store", store, "--ttl", "0s", "leader", "true"}, "--ttl 0s: want a positive duration"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			code, _, stderr := lockctl(t, nil, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, "lockctl "+tc.args[0]+": "+tc.err) || strings.Contains(stderr, "connect") {
				t.Errorf("lockctl %q = exit %d, stderr %q; want %d and %q, before connecting", tc.args, code, stderr, exitUsage, tc.err)
			}
		})
	}
}

// A RESOURCE the stores refuse (longer than a Redis key may be) is a
// usage error naming the store and the limit, for status and release
// --force as for run: they used to report every store's failure, and 1.
func TestResourceRefusedByStore(t *testing.T) {
	be := backends[0].start(t)
	long := strings.Repeat("x", 5000)
	for _, args := range [][]string{
		append(append([]string{"status"}, be.flags()...), long),
		append(append([]string{"status", "--json"}, be.flags()...), long),
		append(append([]string{"release", "--force", "--yes"}, be.flags()...), long),
		append(append([]string{"run"}, be.flags()...), long, "true"),
	} {
		code, stdout, stderr := lockctl(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "resource name is 5000 bytes long") || stdout != "" {
			t.Errorf("lockctl %s on a 5000-byte RESOURCE = exit %d, stdout %.100q, stderr %.300q; want %d and the store's limit", args[0], code, stdout, stderr, exitUsage)
		}
	}
}

// A --lock FILE that cannot be read is a usage error naming it: exit 1
// says a store failed, and release --lock then means the lock may still
// be held.
func TestUnreadableLockFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.lock")
	for _, cmd := range []string{"extend", "release"} {
		args := []string{cmd, "--lock", missing, "--store", "redis://" + closedPort(t)}
		code, _, stderr := lockctl(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "lockctl "+cmd+": --lock "+missing+": ") || !strings.Contains(stderr, "no such file") {
			t.Errorf("lockctl %q = exit %d, stderr %q; want %d naming --lock %s", args, code, stderr, exitUsage, missing)
		}
	}
}
