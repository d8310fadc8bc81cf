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

// release --force without -n, --shared or --exclusive, finding the lock
// free but a read-write lock or permits held on RESOURCE, says so and
// names the flag that releases them, rather than "was not held".
func TestReleaseForceNamesTheFlag(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		locker := b.locker(t)
		release := func(resource string) (int, string, string) {
			t.Helper()
			return lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), resource)...)
		}
		rw, err := lock.NewRWLocker(locker)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rw.Writer().TryLock(ctx, "stuck", 10*time.Minute); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := release("stuck")
		if code != 0 || !strings.HasPrefix(stdout, "stuck: was not held as a lock; held --exclusive") || !strings.Contains(stdout, ": add --exclusive to release it\n") {
			t.Errorf("release --force with a writer holding the read-write lock: exit %d, stdout %q, stderr %q; want 0 and the flag to use", code, stdout, stderr)
		}
		for range 2 {
			if _, err := rw.Reader().TryLock(ctx, "shared", 10*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		code, stdout, stderr = release("shared")
		if code != 0 || !strings.HasPrefix(stdout, "shared: was not held as a lock; held --shared by 2 readers: add --shared to release it\n") {
			t.Errorf("release --force with readers holding the read-write lock: exit %d, stdout %q, stderr %q; want 0 and the flag to use", code, stdout, stderr)
		}
		sem, err := lock.NewSemaphore(locker, 2)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := sem.TryLock(ctx, "builds", 10*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		// Permits are found where the stores tell their limit.
		want := "builds: was not held\n"
		if b.limits {
			want = "builds: was not held as a lock; 2 of 2 permits held: add -n 2 to release it\n"
		}
		code, stdout, stderr = release("builds")
		if code != 0 || !strings.HasPrefix(stdout, want) {
			t.Errorf("release --force with permits held: exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, want)
		}
		if code, stdout, _ := release("free"); code != 0 || !strings.HasPrefix(stdout, "free: was not held\n") {
			t.Errorf("release --force of a free resource: exit %d, stdout %q; want 0 and was not held", code, stdout)
		}
	})
}
