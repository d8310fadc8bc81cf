package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// A lock file records the stores its lock was taken on. extend and
// release --lock given other stores refuse it with status 2, naming both,
// before sending anything: the file and the lock stay as they were. Before,
// extend and release on another server exited 76 and removed the file of a
// lock still held, and on a Redlock sharing a minority of the stores
// succeeded: extend recorded a validity the quorum did not have, release
// removed the file while a quorum still held the lock.
func TestLockFileRecordsStores(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	url := func(i int) string { return "redis://" + srvs[i].Addr() }
	flags := func(urls ...string) []string {
		var f []string
		for _, u := range urls {
			f = append(f, "--store", u)
		}
		if len(urls) > 1 {
			f = append(f, "--store-timeout", storeTimeout.String())
		}
		return f
	}
	cmd := func(name string, stores []string, args ...string) (int, string) {
		t.Helper()
		code, _, stderr := lockctl(t, nil, append(append([]string{name}, flags(stores...)...), args...)...)
		return code, stderr
	}
	held := func(i int, resource string) bool {
		t.Helper()
		ok, err := single(t, redisStore(t, srvs[i])).IsLocked(ctx, resource)
		if err != nil {
			t.Fatalf("IsLocked on %s: %v", srvs[i].Addr(), err)
		}
		return ok
	}
	exists := func(file string) bool {
		_, err := os.Stat(file)
		return err == nil
	}

	t.Run("single", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "job.lock")
		if code, stderr := cmd("acquire", []string{url(0)}, "--lock", file, "job/single"); code != 0 {
			t.Fatalf("acquire: exit %d, stderr %q", code, stderr)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			lock.Lock
			Stores []map[string]any `json:"stores"`
		}
		if err := json.Unmarshal(data, &rec); err != nil || rec.Token == "" {
			t.Fatalf("the lock file %q: %v", data, err)
		}
		if len(rec.Stores) != 1 || !strings.Contains(string(data), srvs[0].Addr()) {
			t.Errorf("the lock file %s records stores %v; want the one store at %s", data, rec.Stores, srvs[0].Addr())
		}
		for _, other := range []string{url(1), url(0) + "/1", url(0) + "?prefix=other:"} {
			for _, c := range []string{"extend", "release"} {
				code, stderr := cmd(c, []string{other}, "--lock", file)
				if code != exitUsage || !strings.Contains(stderr, srvs[0].Addr()) || !strings.Contains(stderr, redact(other)) {
					t.Errorf("%s --lock FILE --store %s (acquired on %s): exit %d, stderr %q; want %d, naming both", c, other, url(0), code, stderr, exitUsage)
				}
				if !exists(file) || !held(0, "job/single") {
					t.Fatalf("after %s --store %s: the lock file exists: %v, the lock is held: %v; want both", c, other, exists(file), held(0, "job/single"))
				}
			}
		}
		// Another spelling of the same store is the same store.
		if code, stderr := cmd("extend", []string{url(0) + "?name=again"}, "--lock", file); code != 0 {
			t.Errorf("extend with the store named: exit %d, stderr %q; want 0", code, stderr)
		}
		if code, stderr := cmd("release", []string{url(0)}, "--lock", file); code != 0 || exists(file) || held(0, "job/single") {
			t.Errorf("release on the store of acquire: exit %d, stderr %q, file left: %v; want 0, the file removed, the lock free", code, stderr, exists(file))
		}
	})

	t.Run("redlock", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "job.lock")
		if code, stderr := cmd("acquire", []string{url(0), url(1), url(2)}, "--lock", file, "job/redlock"); code != 0 {
			t.Fatalf("acquire: exit %d, stderr %q", code, stderr)
		}
		before, _ := os.ReadFile(file)
		for _, tc := range []struct {
			name   string
			stores []string
		}{
			{"extend", []string{url(0), url(1), url(3)}},
			{"release", []string{url(0), url(3), url(4)}},
			{"release", []string{url(0), url(1)}},
		} {
			code, stderr := cmd(tc.name, tc.stores, "--lock", file)
			if code != exitUsage || !strings.Contains(stderr, srvs[2].Addr()) {
				t.Errorf("%s --store %s (acquired on %s %s %s): exit %d, stderr %q; want %d, naming the stores of acquire", tc.name, strings.Join(tc.stores, " --store "), url(0), url(1), url(2), code, stderr, exitUsage)
			}
			if after, _ := os.ReadFile(file); string(after) != string(before) {
				t.Errorf("%s on other stores changed the lock file: %q; was %q", tc.name, after, before)
			}
		}
		for i := range 3 {
			if !held(i, "job/redlock") {
				t.Errorf("the lock is no longer held on %s after refused commands", srvs[i].Addr())
			}
		}
		// The stores of acquire in another order are the same stores.
		same := []string{url(2), url(0), url(1)}
		if code, stderr := cmd("extend", same, "--lock", file); code != 0 {
			t.Errorf("extend on the stores of acquire in another order: exit %d, stderr %q; want 0", code, stderr)
		}
		if code, stderr := cmd("release", same, "--lock", file); code != 0 || exists(file) {
			t.Errorf("release on the stores of acquire: exit %d, stderr %q; want 0 and the file removed", code, stderr)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		code, out, stderr := lockctl(t, nil, "acquire", "--store", url(0), "job/stdin")
		if code != 0 {
			t.Fatalf("acquire: exit %d, stderr %q", code, stderr)
		}
		if code, _, stderr := lockctlIn(t, out, "release", "--store", url(1), "--lock", "-"); code != exitUsage || !held(0, "job/stdin") {
			t.Errorf("release --lock - on another store: exit %d, stderr %q; want %d and the lock still held", code, stderr, exitUsage)
		}
		if code, _, stderr := lockctlIn(t, out, "release", "--store", url(0), "--lock", "-"); code != 0 {
			t.Errorf("release --lock - on the store of acquire: exit %d, stderr %q; want 0", code, stderr)
		}
	})

	// A lock file without stores (an older lockctl's, or a lock.Lock a Go
	// program wrote) is taken as it is.
	t.Run("unrecorded", func(t *testing.T) {
		l, err := single(t, redisStore(t, srvs[0])).TryLock(ctx, "job/go", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(l)
		file := filepath.Join(t.TempDir(), "job.lock")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if code, stderr := cmd("extend", []string{url(0)}, "--lock", file); code != 0 {
			t.Errorf("extend of a lock file without stores: exit %d, stderr %q; want 0", code, stderr)
		}
		if code, stderr := cmd("release", []string{url(0)}, "--lock", file); code != 0 || exists(file) || held(0, "job/go") {
			t.Errorf("release of a lock file without stores: exit %d, stderr %q; want 0, the file removed and the lock free", code, stderr)
		}
	})
}

// A lock file taken through one seed of a Redis Cluster is extended and
// released through other seeds of the same cluster: the docs count "other
// seeds of one cluster" as the same store. The file recorded only the
// seeds acquire was given, so extend and release --lock given other nodes
// of the cluster refused it with status 2 as if it were another store.
func TestLockFileOtherSeedsOfOneCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	addrs := c.Addrs()
	acquired := "redis+cluster://" + addrs[0] + "?prefix=seeds:"
	others := "redis+cluster://" + strings.Join(addrs[1:], ",") + "?prefix=seeds:"
	file := filepath.Join(t.TempDir(), "job.lock")
	if code, _, stderr := lockctl(t, nil, "acquire", "--store", acquired, "--lock", file, "job/seeds"); code != 0 {
		t.Fatalf("acquire --store %s: exit %d, stderr %q", acquired, code, stderr)
	}
	for _, c := range []string{"extend", "release"} {
		if code, _, stderr := lockctl(t, nil, c, "--store", others, "--lock", file); code != 0 {
			t.Errorf("%s --store %s --lock FILE (acquired through %s): exit %d, stderr %q; want 0: one cluster", c, others, acquired, code, stderr)
		}
	}
	if code, stdout, stderr := lockctl(t, nil, "status", "--store", acquired, "job/seeds"); code != 0 || !strings.HasPrefix(stdout, "job/seeds: free") {
		t.Errorf("status after release --lock: exit %d, stdout %q, stderr %q; want free", code, stdout, stderr)
	}
}
