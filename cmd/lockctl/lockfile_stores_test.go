package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// The stores a lock file records name where the locks live and nothing
// secret; the same stores in other spellings, with other passwords or
// names, pass the check, and another database, prefix, table or server
// does not.
func TestLockFileStoresRecord(t *testing.T) {
	const secret = "s3cr3t"
	specs := func(urls ...string) []*storeSpec {
		t.Helper()
		var out []*storeSpec
		for _, u := range urls {
			spec, err := parseStore(u)
			if err != nil {
				t.Fatalf("parseStore(%q): %v", u, err)
			}
			out = append(out, spec)
		}
		return out
	}
	for _, tc := range []struct {
		acquired []string // the stores of acquire
		same     []string // the same stores
		other    [][]string
	}{
		{
			acquired: []string{"redis://u:" + secret + "@10.0.0.1:6379/2?prefix=jobs:"},
			same:     []string{"rediss://other:pass@10.0.0.1/2?prefix=jobs:&name=r1&insecure=true"},
			other: [][]string{
				{"redis://10.0.0.1:6379/3?prefix=jobs:"},
				{"redis://10.0.0.1:6379/2"},
				{"redis://10.0.0.2:6379/2?prefix=jobs:"},
				{"redis+cluster://10.0.0.1:6379?prefix=jobs:"},
			},
		},
		{
			acquired: []string{"redis+sentinel://:" + secret + "@10.0.0.1,10.0.0.2/mymaster?sentinel_password=" + secret, "memcache://10.0.0.3", "etcd://root:" + secret + "@10.0.0.4:2379,10.0.0.5:2379"},
			same:     []string{"etcd://10.0.0.5:2379?name=e", "memcache://10.0.0.3:11211?prefix=lock:", "redis+sentinel://10.0.0.2:26379/mymaster/0"},
			other: [][]string{
				{"redis+sentinel://10.0.0.1,10.0.0.2/other", "memcache://10.0.0.3", "etcd://10.0.0.4:2379"},
				{"redis+sentinel://10.0.0.1,10.0.0.2/mymaster", "memcache://10.0.0.3", "etcd://10.0.0.4:2379?prefix=x/"},
				{"redis+sentinel://10.0.0.1,10.0.0.2/mymaster", "memcache://10.0.0.3"},
				{"redis+sentinel://10.0.0.1,10.0.0.2/mymaster", "memcache://10.0.0.3", "etcd://10.0.0.4:2379", "redis://10.0.0.9"},
			},
		},
		{
			acquired: []string{"postgres://app:" + secret + "@db1:5432/app?sslmode=disable&schema=ops&table=locks"},
			same:     []string{"postgres://app@db1/app?table=locks&schema=ops&sslmode=require"},
			other: [][]string{
				{"postgres://app@db1/app?table=locks"},
				{"postgres://app@db1/other?table=locks&schema=ops"},
			},
		},
	} {
		lf := lockFile{Lock: lock.Lock{Resource: "r", Token: "t"}, Stores: recordStores(specs(tc.acquired...))}
		data := encodeLock(lf)
		if strings.Contains(string(data), secret) {
			t.Errorf("the lock file of a lock on %q shows a secret: %s", tc.acquired, data)
		}
		var back lockFile
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("the lock file %s: %v", data, err)
		}
		var l lock.Lock
		if err := json.Unmarshal(data, &l); err != nil || l != lf.Lock {
			t.Errorf("json.Unmarshal of the lock file %s into a lock.Lock: %+v, %v; want %+v", data, l, err, lf.Lock)
		}
		if err := checkStores("F", back, specs(tc.acquired...)); err != nil {
			t.Errorf("the stores of acquire %q, refused: %v", tc.acquired, err)
		}
		if err := checkStores("F", back, specs(tc.same...)); err != nil {
			t.Errorf("stores %q, the same as acquire's %q, refused: %v", tc.same, tc.acquired, err)
		}
		for _, other := range tc.other {
			err := checkStores("F", back, specs(other...))
			if exitCode(err) != exitUsage {
				t.Errorf("stores %q, for a lock taken on %q: %v; want a usage error", other, tc.acquired, err)
			} else if strings.Contains(err.Error(), secret) {
				t.Errorf("the refusal shows a secret: %v", err)
			}
		}
	}
}

// extend does not recreate a lock file that release --lock removed while
// extend was under way: the file would hold a released lock, and a later
// acquire onto it would be refused ("exists: it may hold a lock still
// held"). extend says the lock is no longer held.
func TestExtendDoesNotRecreateReleasedFile(t *testing.T) {
	srv := redistest.Start(t)
	store := "redis://" + srv.Addr()
	file := filepath.Join(t.TempDir(), "job.lock")
	if code, _, stderr := runCLI(t, nil, "acquire", "--store", store, "--lock", file, "job/race"); code != exitOK {
		t.Fatalf("acquire: exit %d, stderr %q", code, stderr)
	}
	t.Cleanup(func() { extendedHook = nil })
	extendedHook = func() {
		extendedHook = nil
		if code, _, stderr := runCLI(t, nil, "release", "--store", store, "--lock", file); code != exitOK {
			t.Errorf("release while extend was under way: exit %d, stderr %q; want 0", code, stderr)
		}
	}
	code, _, stderr := runCLI(t, nil, "extend", "--store", store, "--lock", file)
	if _, err := os.Stat(file); err == nil {
		data, _ := os.ReadFile(file)
		t.Errorf("extend recreated the lock file that release removed meanwhile: %s (extend: exit %d, stderr %q)", data, code, stderr)
	}
	if code != exitLost {
		t.Errorf("extend of a lock released meanwhile: exit %d, stderr %q; want %d", code, stderr, exitLost)
	}
	if held, err := single(t, redisStore(t, srv)).IsLocked(t.Context(), "job/race"); err != nil || held {
		t.Errorf("IsLocked after release = %v, %v; want free", held, err)
	}
}

// failingLocker is a Locker whose TryLock fails at once, as over a store
// that is down; it cancels the run after limit calls. Other methods are
// not called.
type failingLocker struct {
	lock.Locker
	calls  atomic.Int64
	limit  int64
	cancel context.CancelFunc
}

func (f *failingLocker) TryLock(context.Context, string, time.Duration) (lock.Lock, error) {
	if f.calls.Add(1) >= f.limit {
		f.cancel()
	}
	return lock.Lock{}, fmt.Errorf("connection refused: %w", lock.ErrUnavailable)
}

// A bench worker whose attempts fail at once pauses before the next
// rather than spinning (a store that is down made every worker burn a
// core): in one second of fake time it makes a few tens of attempts, not
// thousands. (This file holds it because the brief named no bench test file.)
func TestBenchBacksOffAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		locker := &failingLocker{limit: 10000, cancel: cancel}
		var pairs, fails atomic.Int64
		benchLoop(ctx, locker, "r", time.Second, &benchWorker{}, &pairs, func(error) { fails.Add(1) })
		if n := locker.calls.Load(); n > 100 {
			t.Errorf("bench made %d attempts in 1s (fake time) with every attempt failing at once (%d failures counted); want a pause after each failure, at most 100 attempts", n, fails.Load())
		}
		if pairs.Load() != 0 {
			t.Errorf("bench counted %d pairs; want 0", pairs.Load())
		}
	})
}
