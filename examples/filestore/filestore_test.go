//go:build unix

package filestore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/examples/filestore"
)

// The whole suite, in real time: each rule gets a fresh directory. The
// store keeps nothing outside its files, so a restart (of the process
// using it) changes nothing: the restart rule checks that locks and
// fences survive it.
func TestConformance(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		s, err := filestore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, &conformance.Options{TTL: 100 * time.Millisecond, Tolerance: 100 * time.Millisecond, Restart: func(*testing.T) {}})
}

// Two stores over the same directory (two processes, say) exclude each
// other.
func ExampleNew() {
	tmp, _ := os.MkdirTemp("", "locks")
	defer os.RemoveAll(tmp)
	dir, _ := filestore.New(tmp)
	other, _ := filestore.New(tmp)
	a, _ := lock.NewSingle(dir, nil)
	b, _ := lock.NewSingle(other, nil)
	ctx := context.Background()

	held, err := a.TryLock(ctx, "deploy", time.Minute)
	fmt.Println(err, held.Fence > 0)
	_, err = b.TryLock(ctx, "deploy", time.Minute)
	fmt.Println(err)
	fmt.Println(a.Unlock(ctx, held))
	// Output:
	// <nil> true
	// trylock "deploy": not acquired: held by another owner
	// <nil>
}
