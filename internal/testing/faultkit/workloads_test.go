package faultkit_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/stores/memory"
)

// workload is a contention workload of six clients over one memory store.
func workload(store lock.Store) contention.Config {
	return contention.Config{
		Workers: 6, Resources: []string{"a", "b"}, TTL: time.Second, Hold: 20 * time.Millisecond, Pause: 2 * time.Millisecond, Duration: time.Second,
		Retry: &lock.Retry{Attempts: lock.Forever, Delay: 2 * time.Millisecond, MaxDelay: 20 * time.Millisecond},
		NewLocker: func(int) (lock.Locker, func(), error) {
			l, err := lock.NewSingle(store, nil)
			return l, nil, err
		},
	}
}

// Semaphores lets the limit of holders in at once, and the checker holds
// them to it: a semaphore of three checked against a limit of two is
// caught.
func TestSemaphores(t *testing.T) {
	for _, tc := range []struct{ permits, limit int }{{2, 2}, {3, 2}} {
		synctest.Test(t, func(t *testing.T) {
			cfg := workload(memory.New())
			faultkit.Semaphores(&cfg, tc.permits)
			cfg.Limit = tc.limit
			res, err := contention.Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			rep := res.Report("semaphore", "memory")
			if rep.MaxHolders != tc.permits || (rep.Violations > 0) != (tc.permits > tc.limit) {
				t.Errorf("semaphore of %d checked against %d: %s; want %d holders at once, violations only above the limit", tc.permits, tc.limit, rep.Line(), tc.permits)
			}
		})
	}
}

// ReadersWriters makes two writers and four readers: readers share, a
// writer is alone, and both are served.
func TestReadersWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := workload(memory.New())
		faultkit.ReadersWriters(&cfg, 2)
		res, err := contention.Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rep := res.Report("rwlock", "memory")
		if rep.Violations > 0 || rep.MaxHolders < 2 || res.Writes == 0 || rep.Acquisitions <= res.Writes {
			t.Errorf("want readers together, writers alone, both served: %s (writes %d)", rep.Line(), res.Writes)
		}
	})
}
