//go:build unix

package filestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/examples/filestore"
)

// A store made over a relative directory keeps using that directory after
// the process changes its working directory: otherwise it would look for
// its locks elsewhere, find the resource it holds free and grant it again.
func TestRelativeDirSurvivesChdir(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(second, "locks"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(first)
	s, err := filestore.New("locks")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Acquire(ctx, "r", "a", time.Minute); err != nil {
		t.Fatalf("Acquire(r, a, 1m) = %v; want nil", err)
	}
	t.Chdir(second)
	if held, err := s.Exists(ctx, "r"); err != nil || !held {
		t.Errorf("Exists(r) after a chdir = %v, %v; want true, nil", held, err)
	}
	if err := s.Acquire(ctx, "r", "b", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire(r, b, 1m) after a chdir, while a holds r = %v; want ErrNotAcquired", err)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Errorf("Release(r, a) after a chdir = %v; want nil", err)
	}
}

// New refuses an empty directory name with ErrInvalid, as the stores
// refuse bad input, rather than reporting a file system error.
func TestNewRefusesEmptyDir(t *testing.T) {
	if _, err := filestore.New(""); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf(`New("") = %v; want ErrInvalid`, err)
	}
}
