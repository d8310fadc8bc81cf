//go:build unix

package filestore_test

import (
	"context"
	"errors"
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
	for call, err := range map[string]error{
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
