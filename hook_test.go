package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// recorder is a Hook that records events as short lines.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Observe(_ context.Context, e lock.Event) {
	var line string
	switch e.Kind {
	case lock.EventAttempt:
		line = fmt.Sprintf("%s %s #%d", e.Op, e.Kind, e.Attempt)
	case lock.EventStoreCall:
		line = fmt.Sprintf("%s %s %s %s %s", e.Op, e.Kind, e.Store, e.StoreOp, outcome(e.Err))
	case lock.EventQuorum:
		line = fmt.Sprintf("%s %s granted=%d refused=%d failed=%d %s", e.Op, e.Kind, e.Granted, e.Refused, e.Failed, outcome(e.Err))
	case lock.EventRetry:
		line = fmt.Sprintf("%s %s after #%d waiting=%v %s", e.Op, e.Kind, e.Attempt, e.Waiting, outcome(e.Err))
	case lock.EventAcquired, lock.EventNotAcquired:
		line = fmt.Sprintf("%s %s after %d attempt(s) in %v %s", e.Op, e.Kind, e.Attempt, e.Duration, outcome(e.Err))
	default:
		line = fmt.Sprintf("%s %s %s", e.Op, e.Kind, outcome(e.Err))
	}
	r.mu.Lock()
	r.events = append(r.events, line)
	r.mu.Unlock()
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, lock.ErrLost):
		return "lost"
	case errors.Is(err, lock.ErrNotAcquired):
		return "not-acquired"
	case errors.Is(err, lock.ErrNotHeld):
		return "not-held"
	case errors.Is(err, lock.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, lock.ErrClosed):
		return "closed"
	case errors.Is(err, errConnReset):
		return "conn-reset"
	}
	return err.Error()
}

func wantEvents(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: events\n\t%s\nwant\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// The hook sees exactly what happens: store by store (the stores answer
// 1ms, 2ms, … apart on the fake clock, so the order is fixed), the quorum
// decision, the outcome, an extension, a loss and a release.
func TestHookEventSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, ls := memStores(5)
		for i, m := range ms {
			f := memory.Fault{Delay: time.Duration(i+1) * time.Millisecond, Times: memory.Always}
			if i == 2 {
				f.Err = errConnReset
			}
			m.Inject(f)
		}
		rec := &recorder{}
		l := mustMulti(t, ls, &lock.Options{Hook: rec, StoreTimeout: time.Second})
		ctx := t.Context()

		held, err := l.TryLock(ctx, "res", time.Second)
		wantNil(t, "TryLock(res)", err)
		time.Sleep(10 * time.Millisecond) // the last store answers after the decision
		wantEvents(t, "acquire with one failing store of five", rec.take(),
			"trylock attempt #1",
			"trylock store call m0 acquire ok",
			"trylock store call m1 acquire ok",
			"trylock store call m2 acquire conn-reset",
			"trylock store call m3 acquire ok",
			"trylock quorum granted=3 refused=0 failed=1 ok",
			"trylock acquired after 1 attempt(s) in 4ms ok",
			"trylock store call m4 acquire ok",
		)

		_, err = l.Extend(ctx, held, time.Second)
		wantNil(t, "Extend(res)", err)
		wantEvents(t, "extension", rec.take(),
			"extend store call m0 extend ok",
			"extend store call m1 extend ok",
			"extend store call m2 extend conn-reset",
			"extend store call m3 extend ok",
			"extend store call m4 extend ok",
			"extend extended ok",
		)

		wantNil(t, "Unlock(res)", ignoreUnavailable(l.Unlock(ctx, held)))
		wantEvents(t, "release", rec.take(),
			"unlock store call m0 release ok",
			"unlock store call m1 release ok",
			"unlock store call m2 release conn-reset",
			"unlock store call m3 release ok",
			"unlock store call m4 release ok",
			"unlock store call m2 release conn-reset", // a failed release is tried again
			"unlock store call m2 release conn-reset",
			"unlock store call m2 release conn-reset",
			"unlock released ok", // four stores of five released it
		)
	})
}

func ignoreUnavailable(err error) error {
	if errors.Is(err, lock.ErrUnavailable) {
		return nil
	}
	return err
}

func TestHookSeesRetriesAndLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memory.New(memory.WithName("m"))
		rec := &recorder{}
		l := mustSingle(t, m, &lock.Options{Hook: rec})
		ctx := t.Context()
		other := holdElsewhere(t, m, "res", time.Hour)
		go func() {
			// The wait of a Lock retrying Forever, bounded by the TTL
			// and not by the 10ms delay, spans the release: the
			// sequence is fixed.
			time.Sleep(12 * time.Millisecond)
			m.Release(context.Background(), "res", other.Token)
		}()
		err := lock.Run(ctx, l, "res", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			time.Sleep(50 * time.Millisecond)
			m.Expire("res")
			<-ctx.Done()
			return nil
		}, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond}))
		wantIs(t, "Run() losing its lock", err, lock.ErrLost)
		wantEvents(t, "retry, wake on release, acquisition, loss, release", rec.take(),
			"lock attempt #1",
			"lock store call m acquire not-acquired",
			"lock retry after #1 waiting=true not-acquired",
			"lock store call m wait ok",
			"lock attempt #2",
			"lock store call m acquire ok",
			"lock acquired after 2 attempt(s) in 12ms ok",
			"extend store call m extend not-held",
			"extend extended not-held",
			"run lost lost",
			"unlock store call m release not-held",
			"unlock released not-held",
		)
	})
}

// A call refused before anything is sent is reported by its error only:
// bad input, an Extend the stores cannot make, a locker shut down.
func TestHookToldNothingOfRefusedCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		for _, c := range []struct {
			name string
			new  func(o *lock.Options) lock.Locker
		}{
			{"single", func(o *lock.Options) lock.Locker { return mustSingle(t, basic{memory.New()}, o) }},
			{"multi", func(o *lock.Options) lock.Locker {
				return mustMulti(t, []lock.Store{basic{memory.New()}, basic{memory.New()}, basic{memory.New()}}, o)
			}},
		} {
			r := &recorder{}
			l := c.new(&lock.Options{Hook: r})
			held, err := l.TryLock(ctx, "res", time.Minute)
			wantNil(t, c.name+": TryLock(res)", err)
			synctest.Wait() // a MultiLocker's last store may answer after TryLock returned
			r.take()
			_, err = l.TryLock(ctx, "", time.Minute)
			wantIs(t, c.name+`: TryLock("")`, err, lock.ErrInvalid)
			_, err = l.Lock(ctx, "res", -time.Second)
			wantIs(t, c.name+": Lock(res, -1s)", err, lock.ErrInvalid)
			_, err = l.Extend(ctx, held, time.Minute)
			wantIs(t, c.name+": Extend(res) over stores that cannot extend", err, errors.ErrUnsupported)
			wantEvents(t, c.name+": refused calls", r.take())
			wantNil(t, c.name+": Unlock(res)", l.Unlock(ctx, held))
			synctest.Wait() // and its release
			r.take()
			wantNil(t, c.name+": Shutdown()", l.Shutdown(ctx))
			_, err = l.TryLock(ctx, "res", time.Minute)
			wantIs(t, c.name+": TryLock(res) after Shutdown", err, lock.ErrClosed)
			wantEvents(t, c.name+": a call after Shutdown", r.take())
		}
	})
}

// So it is for a semaphore of plain locks and a read-write lock's sides,
// whose Extend the locker underneath refuses, shut down or over stores
// that cannot extend: no event, and no span for a hook that makes them.
func TestHookToldNothingOfRefusedExtendsOfDerivedLockers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		for _, base := range []struct {
			name    string
			stores  func() []lock.Store
			refusal error
		}{
			{"over stores that cannot extend", func() []lock.Store {
				return []lock.Store{basic{memory.New()}, basic{memory.New()}, basic{memory.New()}}
			}, errors.ErrUnsupported},
			{"shut down", func() []lock.Store { return []lock.Store{memory.New(), memory.New(), memory.New()} }, lock.ErrClosed},
		} {
			for _, side := range []string{"a Semaphore of 2", "a writer side", "a reader side"} {
				name := side + ", its locker " + base.name
				r := &recorder{}
				under := mustMulti(t, base.stores(), &lock.Options{Hook: r})
				var l lock.Locker = mustSemaphore(t, under, 2)
				if side != "a Semaphore of 2" {
					rw, err := lock.NewRWLocker(under)
					wantNil(t, "NewRWLocker", err)
					l = rw.Writer()
					if side == "a reader side" {
						l = rw.Reader()
					}
				}
				held, err := l.TryLock(ctx, "res", time.Minute)
				wantNil(t, name+": TryLock(res)", err)
				synctest.Wait()
				if base.refusal == lock.ErrClosed {
					wantNil(t, name+": Shutdown of the locker underneath", under.Shutdown(ctx))
					synctest.Wait()
				}
				r.take()
				_, err = l.Extend(ctx, held, time.Minute)
				wantIs(t, name+": Extend(res)", err, base.refusal)
				wantEvents(t, name+": a refused Extend", r.take())
			}
		}
	})
}
