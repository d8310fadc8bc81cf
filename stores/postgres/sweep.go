package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock/internal/storecall"
)

// sweeper starts a sweep from a call when one is due: no goroutine runs
// between sweeps.
type sweeper struct {
	every   time.Duration // 0: never
	epoch   time.Time
	due     atomic.Int64 // when the next sweep is due, as time since epoch
	running atomic.Bool

	mu     sync.Mutex
	closed bool               // by Store.Close: no sweep starts
	cancel context.CancelFunc // of the latest background sweep
	done   chan struct{}      // closed when it has ended
}

// sweepTimeout bounds a background sweep.
const sweepTimeout = 30 * time.Second

func (w *sweeper) start(every time.Duration) {
	w.every, w.epoch = every, time.Now()
	w.due.Store(int64(every))
}

// maybeSweep starts a sweep in the background if one is due and none is
// running.
func (s *Store) maybeSweep() {
	w := &s.sweep
	if w.every == 0 {
		return
	}
	now := time.Since(w.epoch)
	if int64(now) < w.due.Load() || !w.running.CompareAndSwap(false, true) {
		return
	}
	w.due.Store(int64(now + w.every))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.running.Store(false)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sweepTimeout)
	done := make(chan struct{})
	w.cancel, w.done = cancel, done
	go func() {
		defer close(done)
		defer w.running.Store(false)
		defer cancel()
		_, _ = s.Sweep(ctx) // a failed sweep is tried again at the next interval
	}()
}

// close cancels the background sweep under way, if any, and waits for
// its end; no sweep starts from then on.
func (w *sweeper) close() {
	w.mu.Lock()
	w.closed = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Sweep deletes the locks that have expired (without being released),
// so that they do not accumulate, and returns how many it deleted. The
// store runs it every sweep interval on its own (see WithSweepInterval);
// a released lock is deleted at once, and an expired one is also taken
// over in place by the next acquisition of its resource. Sweep deletes
// in batches, each a statement of its own, until none is left or ctx
// ends. A nil ctx gives an error wrapping lock.ErrInvalid.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	if err := storecall.Check(ctx, "-", 1); err != nil {
		return 0, err
	}
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, s.q.sweep)
		if err != nil {
			return total, s.failed(ctx, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < sweepBatch {
			return total, nil
		}
	}
}
