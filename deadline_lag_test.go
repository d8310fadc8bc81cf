package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// laggingDeadline is a context whose deadline has passed while its Err
// still reports nil: the moment between a client's socket deadline firing
// and the context's timer.
type laggingDeadline struct {
	context.Context
	at time.Time
}

func (c laggingDeadline) Deadline() (time.Time, bool) { return c.at, true }

// A call that a client's own deadline ends a moment before the caller's
// context reports that deadline is ended by the caller's deadline: the
// error matches context.DeadlineExceeded, not ErrUnavailable (nor, for a
// MultiLocker, its store timeout). rueidis and go-redis end calls so.
func TestDeadlinePassedBeforeContextReportsIt(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprint(n, " stores"), func(t *testing.T) {
			ctx := t.Context()
			var ms []*memory.Store
			var stores []lock.Store
			for range n {
				m := memory.New()
				ms = append(ms, m)
				stores = append(stores, withoutStart{m, m, m, m, m})
			}
			var l lock.Locker
			if n > 1 {
				l = mustMulti(t, stores, &lock.Options{StoreTimeout: time.Minute})
			} else {
				l = mustSingle(t, stores[0], nil)
			}
			held, err := l.TryLock(ctx, "r", time.Minute)
			wantNil(t, "TryLock(r)", err)
			for _, m := range ms {
				m.Inject(memory.Fault{Err: fmt.Errorf("read tcp: i/o timeout: %w", context.DeadlineExceeded), Times: memory.Always})
			}
			lagging := laggingDeadline{context.Background(), time.Now().Add(-time.Millisecond)}
			for call, f := range map[string]func() error{
				"Unlock(r)":   func() error { return l.Unlock(lagging, held) },
				"Extend(r)":   func() error { _, err := l.Extend(lagging, held, time.Minute); return err },
				"IsLocked(r)": func() error { _, err := l.IsLocked(lagging, "r"); return err },
				"TryLock(s)":  func() error { _, err := l.TryLock(lagging, "s", time.Minute); return err },
			} {
				err := f()
				if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrUnavailable) || strings.Contains(fmt.Sprint(err), "no answer within") {
					t.Errorf("%s with a deadline passed that its context does not report yet, the store failing with the deadline = %v; want context.DeadlineExceeded, not ErrUnavailable", call, err)
				}
			}
			for _, m := range ms {
				m.ClearFaults()
			}
			wantNil(t, "Unlock(r)", l.Unlock(ctx, held))
		})
	}
}
