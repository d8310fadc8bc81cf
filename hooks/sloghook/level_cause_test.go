package sloghook_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/sloghook"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// notAcquiredLevels records the level sloghook gives each EventNotAcquired.
type notAcquiredLevels struct {
	mu     sync.Mutex
	levels []slog.Level
	errs   []error
}

func (h *notAcquiredLevels) Observe(_ context.Context, e lock.Event) {
	if e.Kind != lock.EventNotAcquired {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.levels = append(h.levels, sloghook.Level(e))
	h.errs = append(h.errs, e.Err)
}

// errRecovering is a store failure that wraps lock.ErrUnavailable, as the
// Redis stores' errors do (a server guarding against lost locks, replicas
// that did not acknowledge).
var errRecovering = fmt.Errorf("server recovering: %w", lock.ErrUnavailable)

func failingStore() *brokenstore.Store {
	return brokenstore.New(func(_ *brokenstore.Store, _ *memory.Store, f *brokenstore.Funcs) {
		f.Acquire = func(context.Context, string, string, time.Duration) error { return errRecovering }
	})
}

// A Lock that failed on contention, or because its context ended, is
// logged at Info as the package doc says, even when a store's failure in
// the error's chain wraps lock.ErrUnavailable: the level follows the
// call's outcome (Error.Err), not the failure of one store among several.
func TestNotAcquiredLevelFollowsTheOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		// Contention: two of three stores hold the resource for another
		// owner, the third fails.
		m1, m2 := memory.New(), memory.New()
		for _, m := range []*memory.Store{m1, m2} {
			if err := m.Acquire(ctx, "job", "other", time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		rec := &notAcquiredLevels{}
		multi, err := lock.NewMulti([]lock.Store{m1, m2, failingStore()}, &lock.Options{Hook: rec})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := multi.TryLock(ctx, "job", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("TryLock(job) held in 2 of 3 stores = %v; want ErrNotAcquired", err)
		}
		// The context ended while the only store failed.
		single, err := lock.NewSingle(failingStore(), &lock.Options{Hook: rec})
		if err != nil {
			t.Fatal(err)
		}
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := single.Lock(tctx, "job", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock(job) on a failing store until the deadline = %v; want DeadlineExceeded", err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.levels) != 2 {
			t.Fatalf("%d EventNotAcquired; want 2", len(rec.levels))
		}
		for i, level := range rec.levels {
			if level != slog.LevelInfo {
				t.Errorf("Level(not acquired: %v) = %v; want INFO", rec.errs[i], level)
			}
		}
	})
}
