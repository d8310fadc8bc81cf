package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// The hook is told every store call, a semaphore's calls on its limit
// marker too, under the marker's name: those that take it, and those
// that fail, which make the semaphore's call fail.
func TestHookToldOfTheLimitMarkersStoreCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(3)
		r := &markerCalls{}
		sem := mustSemaphore(t, mustMulti(t, ls, &lock.Options{Hook: r}), 2)
		p, err := sem.TryLock(ctx, "jobs", time.Minute)
		wantNil(t, "TryLock(jobs)", err)
		synctest.Wait()
		if ok, failed := r.take(); ok != 3 || failed != 0 {
			t.Errorf("TryLock(jobs) took the marker on 3 stores; the hook was told of %d successful and %d failed calls on jobs~limit; want 3 and 0", ok, failed)
		}
		wantNil(t, "Unlock", sem.Unlock(ctx, p))

		for _, m := range ms {
			m.Inject(memory.Fault{Ops: memory.OpExtend, Err: errors.New("connection reset"), Times: memory.Always})
		}
		_, err = sem.TryLock(ctx, "jobs2", time.Minute)
		wantIs(t, "TryLock(jobs2) with every store failing", err, lock.ErrUnavailable)
		synctest.Wait()
		if _, failed := r.take(); failed == 0 {
			t.Errorf("TryLock(jobs2) = %v; the hook was told of no failed call on its marker", err)
		}
	})
}

// markerCalls is a Hook that counts the store calls on limit markers
// that succeeded, and those that failed (not counting the answers "not
// held" and "held by another", which are no failures).
type markerCalls struct {
	mu         sync.Mutex
	ok, failed int
}

func (m *markerCalls) Observe(_ context.Context, e lock.Event) {
	if e.Kind != lock.EventStoreCall || !strings.HasSuffix(e.Resource, "~limit") {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case e.Err == nil:
		m.ok++
	case !errors.Is(e.Err, lock.ErrNotHeld) && !errors.Is(e.Err, lock.ErrNotAcquired):
		m.failed++
	}
}

func (m *markerCalls) take() (ok, failed int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ok, failed = m.ok, m.failed
	m.ok, m.failed = 0, 0
	return ok, failed
}
