package lock_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Two Unlocks of one lock at once on a MultiLocker: exactly one releases
// it, and the other finds it not held, as on a single store. They used to
// split the stores between them (here: the first released two of four,
// the second, while the first waited for the others, the other two), so
// that neither counted a quorum and both reported ErrNotHeld.
func TestContractConcurrentUnlockOneSucceeds(t *testing.T) {
	eachPath(t, func(t *testing.T, stores storesFunc) {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			ms, ls := stores(4)
			m := mustMulti(t, ls, &lock.Options{StoreTimeout: time.Second})
			l, err := m.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock(r)", err)
			for _, s := range ms[2:] {
				s.Inject(memory.Fault{Ops: memory.OpRelease, Delay: 100 * time.Millisecond})
			}
			first := make(chan error, 1)
			go func() { first <- m.Unlock(ctx, l) }()
			synctest.Wait() // the first Unlock released ms[0] and ms[1], and waits for the others
			second := m.Unlock(ctx, l)
			wantNil(t, "the first Unlock(l)", <-first)
			wantIs(t, "the second Unlock(l), begun while the first was under way", second, lock.ErrNotHeld)
			noResidue(t, ms...)
		})
	})
}

// A Lock or TryLock that Shutdown ends after its store granted the lock
// returns ErrClosed, releases the lock, and tells the hook so: its last
// event is EventNotAcquired with ErrClosed, never EventAcquired (which
// ends a SpanHook's span as a success).
func TestContractShutdownDuringAcquisitionTold(t *testing.T) {
	for _, kind := range []string{"single", "multi"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				h := &recorder{}
				ms, ls := memStores(3)
				var l lock.Locker
				if kind == "single" {
					ms, ls = ms[:1], ls[:1]
					l = mustSingle(t, ls[0], &lock.Options{Hook: h})
				} else {
					l = mustMulti(t, ls, &lock.Options{Hook: h, StoreTimeout: 10 * time.Second})
				}
				for _, s := range ms {
					s.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Second})
				}
				got := make(chan error, 1)
				go func() { _, err := l.TryLock(ctx, "r", time.Minute); got <- err }()
				synctest.Wait() // the acquisition is in the stores
				wantNil(t, "Shutdown", l.Shutdown(ctx))
				wantIs(t, "TryLock ended by Shutdown", <-got, lock.ErrClosed)
				noResidue(t, ms...)
				var last string
				for _, e := range h.take() {
					if strings.HasPrefix(e, "trylock acquired") {
						t.Errorf("the hook was told %q, but TryLock returned ErrClosed", e)
					}
					if strings.HasPrefix(e, "trylock ") {
						last = e
					}
				}
				if !strings.HasPrefix(last, "trylock not acquired") || !strings.HasSuffix(last, " closed") {
					t.Errorf("TryLock's last event = %q; want not acquired with ErrClosed", last)
				}
			})
		})
	}
}

// An error of the TokenGenerator fails Lock at once with ErrUnavailable,
// the generator's error in its chain, whatever the retry policy: it used
// to be retried until the context ended, and the context's error came back.
func TestContractTokenErrorFailsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		_, ls := memStores(3)
		for name, l := range map[string]lock.Locker{
			"single": mustSingle(t, ls[0], &lock.Options{Tokens: failingTokens{}}),
			"multi":  mustMulti(t, ls, &lock.Options{Tokens: failingTokens{}}),
		} {
			got := make(chan error, 1)
			go func() { _, err := l.Lock(ctx, "r", time.Minute); got <- err }()
			synctest.Wait()
			select {
			case err := <-got:
				wantIs(t, name+": Lock with a failing token generator", err, lock.ErrUnavailable)
				wantIs(t, name+": Lock with a failing token generator", err, errEntropy)
			default:
				t.Fatalf("%s: Lock with a failing token generator retries; want it to fail at once", name)
			}
		}
	})
}
