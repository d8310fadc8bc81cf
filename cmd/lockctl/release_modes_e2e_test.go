package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// release --force -n N, --shared and --exclusive free what run takes with
// the same flag, whose holder is gone. A lone redis store keeps permits
// and readers itself: release says it cannot delete them, and exits 1.
func TestReleaseForceModes(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		locker := b.locker(t)
		keepsPermits := len(b.urls) == 1 && b.name == "redis"
		release := func(args ...string) (int, string, string) {
			t.Helper()
			return lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), args...)...)
		}
		rw, err := lock.NewRWLocker(locker)
		if err != nil {
			t.Fatal(err)
		}

		// A stuck writer.
		w, err := rw.Writer().TryLock(ctx, "stuck", 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := release("--exclusive", "stuck")
		if code != 0 || !strings.HasPrefix(stdout, "stuck: released\n") {
			t.Errorf("release --force --exclusive: exit %d, stdout %q, stderr %q; want 0 and released", code, stdout, stderr)
		}
		if _, err := rw.Writer().Extend(ctx, w, time.Minute); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("the writer's Extend after release --force --exclusive = %v; want ErrNotHeld", err)
		}
		if l, err := rw.Writer().TryLock(ctx, "stuck", time.Minute); err != nil {
			t.Errorf("a new writer after release --force --exclusive: %v", err)
		} else if err := rw.Writer().Unlock(ctx, l); err != nil {
			t.Error(err)
		}

		// Stuck readers.
		for range 2 {
			if _, err := rw.Reader().TryLock(ctx, "shared", 10*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		code, stdout, stderr = release("--shared", "shared")
		switch {
		case keepsPermits:
			if code != exitFailure || !strings.Contains(stdout, `cannot release them whoever holds them: 2 held on "shared~read"`) {
				t.Errorf("release --force --shared on a store that keeps its permits: exit %d, stdout %q, stderr %q; want %d and that it cannot", code, stdout, stderr, exitFailure)
			}
		case code != 0 || !strings.HasPrefix(stdout, "shared: released\n"):
			t.Errorf("release --force --shared: exit %d, stdout %q, stderr %q; want 0 and released", code, stdout, stderr)
		default:
			if held, err := rw.Reader().IsLocked(ctx, "shared"); err != nil || held {
				t.Errorf("readers after release --force --shared: %v, %v; want none", held, err)
			}
		}

		// Stuck permits.
		sem, err := lock.NewSemaphore(locker, 2)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := sem.TryLock(ctx, "builds", 10*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if b.limits {
			code, _, stderr = release("-n", "3", "builds")
			if code != exitUsage || !strings.Contains(stderr, `the permits on "builds" were taken with -n 2, not -n 3: nothing released`) {
				t.Errorf("release --force -n 3 with permits of -n 2 held: exit %d, stderr %q; want %d and the mismatch", code, stderr, exitUsage)
			}
		}
		code, stdout, stderr = release("-n", "2", "builds")
		switch {
		case keepsPermits:
			if code != exitFailure || !strings.Contains(stdout, `cannot release them whoever holds them: 2 held on "builds"`) {
				t.Errorf("release --force -n 2 on a store that keeps its permits: exit %d, stdout %q, stderr %q; want %d and that it cannot", code, stdout, stderr, exitFailure)
			}
		case code != 0 || !strings.HasPrefix(stdout, "builds: released\n"):
			t.Errorf("release --force -n 2: exit %d, stdout %q, stderr %q; want 0 and released", code, stdout, stderr)
		default:
			if l, err := sem.TryLock(ctx, "builds", time.Minute); err != nil {
				t.Errorf("a permit after release --force -n 2: %v", err)
			} else if err := sem.Unlock(ctx, l); err != nil {
				t.Error(err)
			}
		}
	})
}
