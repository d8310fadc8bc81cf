package lock_test

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// TestShutdownLockerCollectable: a locker shut down after its locks were
// released can be collected; the timer that sweeps its record of held
// locks, set for the expiry of an hour-long lock, used to keep it
// reachable for that hour.
func TestShutdownLockerCollectable(t *testing.T) {
	ctx := context.Background()
	var w weak.Pointer[lock.MultiLocker]
	func() {
		m, err := lock.NewMulti([]lock.Store{memory.New(), memory.New(), memory.New()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		w = weak.Make(m)
		l, err := m.TryLock(ctx, "r", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := m.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for w.Value() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the MultiLocker is still reachable 10s after Shutdown, its locks released")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // background work of the released lock's stores ending
	}
}
