package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// A lock granted before every store answered is unlocked (or extended)
// only after the slow stores have answered: a release sent earlier could
// overtake the slow store's acquire, find nothing, and leave that store
// holding a copy of the lock until it expires.
func TestMultiUnlockWaitsForSlowAcquire(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		for _, then := range []string{"Unlock", "Extend then Unlock"} {
			t.Run(then, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ms, ls := memStores(3)
					ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 20 * time.Millisecond})
					l := mustMulti(t, ls, &lock.Options{StoreTimeout: time.Second})
					start := time.Now()
					held, err := l.TryLock(t.Context(), "res", time.Minute)
					wantNil(t, "TryLock(res)", err)
					if d := time.Since(start); d != 0 {
						t.Fatalf("TryLock returned after %v; want at once, with two stores of three", d)
					}
					if then == "Extend then Unlock" {
						held, err = l.Extend(t.Context(), held, time.Minute)
						wantNil(t, "Extend(res) while the slow store's acquire is on its way", err)
						if d := time.Since(start); d != 20*time.Millisecond {
							t.Errorf("Extend returned after %v; want 20ms, once the slow store answered", d)
						}
					}
					wantNil(t, "Unlock(res) while the slow store's acquire is on its way", l.Unlock(t.Context(), held))
					time.Sleep(time.Second) // fake time: long past every store's answer
					noResidue(t, ms...)
				})
			})
		}
	})
}

// Unlock releases at once on the stores that answered the acquisition,
// and on a slow store only once it has answered.
func TestMultiUnlockReleasesStoreByStore(t *testing.T) {
	eachPath(t, func(t *testing.T, memStores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(3)
			ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 20 * time.Millisecond})
			l := mustMulti(t, ls, &lock.Options{StoreTimeout: time.Second})
			held, err := l.TryLock(t.Context(), "res", time.Minute)
			wantNil(t, "TryLock(res)", err)
			start := time.Now()
			unlocked := make(chan error, 1)
			go func() { unlocked <- l.Unlock(t.Context(), held) }()
			synctest.Wait()
			noResidue(t, ms[0], ms[1])
			select {
			case err := <-unlocked:
				t.Fatalf("Unlock returned (%v) before the slow store answered its acquisition", err)
			default:
			}
			wantNil(t, "Unlock(res)", <-unlocked)
			if d := time.Since(start); d != 20*time.Millisecond {
				t.Errorf("Unlock returned after %v; want 20ms, once the slow store answered and released", d)
			}
			noResidue(t, ms...)
		})
	})
}

// hanging is a store whose releases hang for an hour, whatever their
// context says: a store that answers past its calls' deadlines.
type hanging struct{ lock.Store }

func (h hanging) Release(context.Context, string, string) error {
	time.Sleep(time.Hour)
	return errConnReset
}

// Unlock waits for the stores that answer within a store timeout, but not
// for one that hangs, once a quorum released the lock: it returns once a
// quorum released and a store timeout passed, in either order (a quorum
// reached after the store timeout, through a slow store, included).
func TestMultiUnlockDoesNotWaitForAHangingStore(t *testing.T) {
	for _, c := range []struct {
		name    string
		hang    int                      // the store that hangs
		slow    func(ms []*memory.Store) // faults of the others
		want    time.Duration
		settled []int // the stores that release in time
	}{
		{"quorum in time", 2, func([]*memory.Store) {}, 50 * time.Millisecond, []int{0, 1}},
		{"quorum late", 1, func(ms []*memory.Store) {
			ms[2].Inject(memory.Fault{Ops: memory.OpAcquire, Delay: 40 * time.Millisecond})
			ms[2].Inject(memory.Fault{Ops: memory.OpRelease, Delay: 20 * time.Millisecond})
		}, 60 * time.Millisecond, []int{0, 2}},
	} {
		synctest.Test(t, func(t *testing.T) {
			ms, ls := memStores(3)
			ls[c.hang] = hanging{ms[c.hang]}
			c.slow(ms)
			l := mustMulti(t, ls, &lock.Options{StoreTimeout: 50 * time.Millisecond})
			held, err := l.TryLock(t.Context(), "res", time.Minute)
			wantNil(t, c.name+": TryLock(res)", err)
			start := time.Now()
			wantNil(t, c.name+": Unlock(res) with a store hanging", l.Unlock(t.Context(), held))
			if d := time.Since(start); d != c.want {
				t.Errorf("%s: Unlock returned after %v; want %v", c.name, d, c.want)
			}
			for _, i := range c.settled {
				noResidue(t, ms[i])
			}
			time.Sleep(2 * time.Hour) // the hanging releases return
		})
	}
}

// deaf is a store whose Exists and Holder answer an hour late, whatever
// their context: a store that ignores its deadline.
type deaf struct{ *memory.Store }

func (d deaf) Exists(context.Context, string) (bool, error) {
	time.Sleep(time.Hour)
	return false, errConnReset
}

func (d deaf) Holder(context.Context, string) (string, bool, error) {
	time.Sleep(time.Hour)
	return "", false, errConnReset
}

// IsLocked and Holder answer once every store answered or a store
// timeout passed: a store that ignores its deadline counts as timed out
// and does not hold the caller up (Options.StoreTimeout: a dead store
// costs at most that).
func TestMultiQueriesDoNotWaitForADeafStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		ms, ls := memStores(3)
		ls[1] = deaf{ms[1]}
		l := mustMulti(t, ls, &lock.Options{StoreTimeout: 50 * time.Millisecond, Holder: "worker-7"})
		held, err := l.TryLock(ctx, "res", time.Minute)
		wantNil(t, "TryLock(res)", err)
		start := time.Now()
		locked, err := l.IsLocked(ctx, "res")
		if d := time.Since(start); !locked || err != nil || d != 50*time.Millisecond {
			t.Errorf("IsLocked(res) with a deaf store = %v, %v after %v; want true, nil after the 50ms store timeout", locked, err, d)
		}
		start = time.Now()
		who, ok, err := l.Holder(ctx, "res")
		if d := time.Since(start); who != "worker-7" || !ok || err != nil || d != 50*time.Millisecond {
			t.Errorf("Holder(res) with a deaf store = %q, %v, %v after %v; want worker-7, true, nil after the 50ms store timeout", who, ok, err, d)
		}
		wantNil(t, "Unlock(res)", l.Unlock(ctx, held))
		start = time.Now()
		locked, err = l.IsLocked(ctx, "res")
		if d := time.Since(start); locked || !errors.Is(err, lock.ErrUnavailable) || d != 50*time.Millisecond {
			t.Errorf("IsLocked(res) released, with a deaf store = %v, %v after %v; want false, ErrUnavailable after the 50ms store timeout", locked, err, d)
		}
		time.Sleep(2 * time.Hour) // the deaf calls return
	})
}
