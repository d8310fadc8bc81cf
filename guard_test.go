package lock_test

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lockkit/lock"
)

func TestFenceGuard(t *testing.T) {
	var g lock.FenceGuard
	wrote := 0
	write := func() error { wrote++; return nil }
	wantNil(t, "Do(a, 5)", g.Do("a", 5, write))
	wantNil(t, "Do(a, 5) again: the same holder writes twice", g.Do("a", 5, write))
	wantIs(t, "Do(a, 4) after 5", g.Do("a", 4, write), lock.ErrStaleFence)
	wantNil(t, "Do(b, 1): another key", g.Do("b", 1, write))
	wantIs(t, "Do(a, 0)", g.Do("a", 0, write), lock.ErrInvalid)
	if wrote != 3 {
		t.Errorf("%d writes ran; want 3: refused writes must not run", wrote)
	}
	errWrite := errors.New("disk full")
	if err := g.Do("a", 6, func() error { return errWrite }); !errors.Is(err, errWrite) {
		t.Errorf("Do(a, 6) with a failing write = %v; want the write's error", err)
	}
	wantIs(t, "Do(a, 5) after a failed write with 6", g.Do("a", 5, write), lock.ErrStaleFence)
}

// Writes to one key run one at a time: a writer with a higher fence that
// comes while a lower one writes waits for it, so its write lands last.
func TestFenceGuardOrdersWrites(t *testing.T) {
	var g lock.FenceGuard
	var mu sync.Mutex
	var landed []uint64
	land := func(f uint64) {
		mu.Lock()
		landed = append(landed, f)
		mu.Unlock()
	}
	var newerLanded atomic.Bool
	newer := make(chan error)
	err := g.Do("k", 1, func() error {
		go func() {
			newer <- g.Do("k", 2, func() error { land(2); newerLanded.Store(true); return nil })
		}()
		for range 10000 { // give the newer writer every chance to overtake
			if newerLanded.Load() {
				break
			}
			runtime.Gosched()
		}
		land(1)
		return nil
	})
	wantNil(t, "Do(k, 1)", err)
	wantNil(t, "Do(k, 2) while Do(k, 1) writes", <-newer)
	if len(landed) != 2 || landed[0] != 1 {
		t.Errorf("writes landed in the order %v; want [1 2]", landed)
	}
}
