//go:build unix

package filestore_test

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/examples/filestore"
)

// Bad input is refused with ErrInvalid before any file is touched, for
// every call, as the memory store refuses it.
func TestRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	s, err := filestore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var nilCtx context.Context // nil: the bad input under test
	for call, err := range map[string]error{
		`Acquire(nil ctx)`:       s.Acquire(nilCtx, "r", "tok", time.Minute),
		`Release(nil ctx)`:       s.Release(nilCtx, "r", "tok"),
		`Acquire("", tok)`:       s.Acquire(ctx, "", "tok", time.Minute),
		`Acquire(r, "")`:         s.Acquire(ctx, "r", "", time.Minute),
		`Acquire(r, tok, 0)`:     s.Acquire(ctx, "r", "tok", 0),
		`Release(r, "")`:         s.Release(ctx, "r", ""),
		`Release("", tok)`:       s.Release(ctx, "", "tok"),
		`Extend(r, "", 1m)`:      s.Extend(ctx, "r", "", time.Minute),
		`Extend(r, tok, -1s)`:    s.Extend(ctx, "r", "tok", -time.Second),
		`Acquire(r, "a\nb", 1m)`: s.Acquire(ctx, "r", "a\nb", time.Minute),
	} {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s = %v; want ErrInvalid", call, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("%d files created by refused calls; want none", len(entries))
	}
}

// A TTL whose expiry a lock file cannot hold (Unix nanoseconds past
// 2262) is refused with ErrInvalid: taken, it would wrap around to an
// expiry in the past, and the next owner's Acquire would succeed too.
func TestRefusesTTLPastWhatAFileHolds(t *testing.T) {
	s, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	huge := time.Duration(math.MaxInt64)
	if err := s.Acquire(ctx, "r", "a", huge); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Acquire(r, a, %v) = %v; want ErrInvalid", huge, err)
	}
	if err := s.Acquire(ctx, "r", "b", time.Minute); err != nil {
		t.Fatalf("Acquire(r, b, 1m) = %v; want nil", err)
	}
	if err := s.Extend(ctx, "r", "b", huge); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Extend(r, b, %v) = %v; want ErrInvalid", huge, err)
	}
	if _, held, err := s.TTL(ctx, "r"); err != nil || !held {
		t.Errorf("TTL(r) after the refused Extend = held %v, %v; want held", held, err)
	}
	if err := s.Acquire(ctx, "r", "c", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire(r, c, 1m) while b holds r = %v; want ErrNotAcquired", err)
	}
}

// Calls that take no lock — Exists, TTL, and a Release or Extend of a
// resource nobody locked — create no file: the directory holds one file
// per resource ever locked, as the package doc says, not one per name
// ever asked about.
func TestQueriesCreateNoFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := filestore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if held, err := s.Exists(ctx, "a"); err != nil || held {
		t.Errorf("Exists(a) = %v, %v; want false, nil", held, err)
	}
	if _, held, err := s.TTL(ctx, "b"); err != nil || held {
		t.Errorf("TTL(b) = held %v, %v; want false, nil", held, err)
	}
	if err := s.Release(ctx, "c", "tok"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(c, tok) = %v; want ErrNotHeld", err)
	}
	if err := s.Extend(ctx, "d", "tok", time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend(d, tok, 1m) = %v; want ErrNotHeld", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("%d files created by calls that took no lock; want none", len(entries))
	}
	if err := s.Acquire(ctx, "e", "tok", time.Minute); err != nil {
		t.Fatalf("Acquire(e, tok, 1m) = %v; want nil", err)
	}
	if held, err := s.Exists(ctx, "e"); err != nil || !held {
		t.Errorf("Exists(e) after Acquire = %v, %v; want true, nil", held, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files after one resource was locked; want 1", len(entries))
	}
}

// A TTL that passes the check but whose expiry, computed from the clock
// read a moment later, goes past what a lock file holds is held to that
// limit: it used to wrap around, and a second owner took the lock too.
func TestTTLAtTheLimitHoldsTheLock(t *testing.T) {
	s, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 200 {
		ttl := time.Duration(math.MaxInt64-time.Now().UnixNano()) - 2*time.Microsecond
		err := s.Acquire(ctx, "r", "a", ttl)
		if errors.Is(err, lock.ErrInvalid) {
			continue // refused by the check: nothing to see
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Acquire(ctx, "r", "b", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Acquire(r, a, %v) = nil, then Acquire(r, b, 1m) = %v; want ErrNotAcquired", ttl, err)
		}
		if err := s.Release(ctx, "r", "a"); err != nil {
			t.Fatalf("Release(r, a) = %v; want nil", err)
		}
	}
}
