package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// "every replica tries, one runs the job, the others get ErrSkipped": a
// locker that lets several holders in at once (a Semaphore of more than
// one permit, a read-write lock's reader side) would let several replicas
// run the job at once, so RunOnce refuses it, as NewElection does, before
// anything is sent.
func TestRunOnceRefusesALockerOfSeveralHolders(t *testing.T) {
	c := newCounting("m")
	sem, err := lock.NewSemaphore(mustSingle(t, c, nil), 2)
	wantNil(t, "NewSemaphore(locker, 2)", err)
	rw, err := lock.NewRWLocker(mustSingle(t, c, nil))
	wantNil(t, "NewRWLocker(locker)", err)
	for name, locker := range map[string]lock.Locker{"a Semaphore of 2": sem, "a reader side": rw.Reader()} {
		ran := false
		err := lock.RunOnce(t.Context(), locker, "job", time.Second, func(context.Context, lock.Lock) error {
			ran = true
			return nil
		})
		wantIs(t, "RunOnce(over "+name+")", err, lock.ErrInvalid)
		if ran {
			t.Errorf("RunOnce(over %s) ran the job; want it refused", name)
		}
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("the store got %d calls; want the refusals made before anything is sent", n)
	}

	// One permit, or the writer's side, lets one holder in at a time.
	sem1, err := lock.NewSemaphore(mustSingle(t, memory.New(), nil), 1)
	wantNil(t, "NewSemaphore(locker, 1)", err)
	for name, locker := range map[string]lock.Locker{"a Semaphore of 1": sem1, "a writer side": rw.Writer()} {
		wantNil(t, "RunOnce(over "+name+")", lock.RunOnce(t.Context(), locker, "job", time.Second, func(context.Context, lock.Lock) error { return nil }))
	}
}
