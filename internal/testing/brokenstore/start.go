package brokenstore

import (
	"context"
	"sync"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Stores whose Start is wrong.

// StartAnswersTwice calls done twice for every call started with Start.
func StartAnswersTwice() *Store {
	return New(func(s *Store, _ *memory.Store, f *Funcs) {
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			fence, err := c.Run(ctx, s)
			done(fence, err)
			done(fence, err)
		}
	})
}

// StartIgnoresHolder grants every acquisition started with Start.
func StartIgnoresHolder() *Store {
	return New(func(s *Store, _ *memory.Store, f *Funcs) {
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			fence, err := c.Run(ctx, s)
			if (c.Op == lock.CallAcquire || c.Op == lock.CallAcquireFenced) && err == lock.ErrNotAcquired {
				err = nil
			}
			done(fence, err)
		}
	})
}

// StartIgnoresDeadline makes calls started with Start whatever their
// context's deadline; it honours cancellation only.
func StartIgnoresDeadline() *Store {
	return New(func(s *Store, _ *memory.Store, f *Funcs) {
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			if ctx.Err() == context.Canceled {
				done(0, ctx.Err())
				return
			}
			done(c.Run(context.WithoutCancel(ctx), s))
		}
	})
}

// StartBatchesDeadlines gathers the calls started within a millisecond
// and makes them all under the earliest deadline among them: a caller
// with a short deadline makes the others fail.
func StartBatchesDeadlines() *Store {
	type started struct {
		ctx  context.Context
		c    lock.Call
		done func(uint64, error)
	}
	var mu sync.Mutex
	var batch []started
	return New(func(s *Store, _ *memory.Store, f *Funcs) {
		flush := func() {
			mu.Lock()
			b := batch
			batch = nil
			mu.Unlock()
			ctx := context.Background()
			for _, st := range b {
				if d, ok := st.ctx.Deadline(); ok {
					var cancel context.CancelFunc
					ctx, cancel = context.WithDeadline(ctx, d)
					defer cancel()
				}
			}
			for _, st := range b {
				st.done(st.c.Run(ctx, s))
			}
		}
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			mu.Lock()
			batch = append(batch, started{ctx, c, done})
			first := len(batch) == 1
			mu.Unlock()
			if first {
				time.AfterFunc(time.Millisecond, flush)
			}
		}
	})
}

// StartDropsFence answers fenced acquisitions started with Start with
// fence 0.
func StartDropsFence() *Store {
	return New(func(s *Store, _ *memory.Store, f *Funcs) {
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			_, err := c.Run(ctx, s)
			done(0, err)
		}
	})
}

// StartIgnoresRaise answers RaiseFence calls started with Start with
// success, and raises nothing.
func StartIgnoresRaise() *Store {
	return New(func(s *Store, _ *memory.Store, f *Funcs) {
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			if c.Op == lock.CallRaiseFence {
				done(0, ctx.Err())
				return
			}
			done(c.Run(ctx, s))
		}
	})
}

// StartIgnoresContext makes calls started with Start whatever their
// context, canceled or past its deadline, and answers their outcome.
func StartIgnoresContext() *Store {
	return New(func(s *Store, _ *memory.Store, f *Funcs) {
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			done(c.Run(context.WithoutCancel(ctx), s))
		}
	})
}

// StartLosesConcurrentAnswers answers a started call a millisecond later,
// from a goroutine, but never answers a call started while another is
// waiting for its answer, as a pipeline that loses a reply when two
// callers send at once: calls made one at a time are all answered.
func StartLosesConcurrentAnswers() *Store {
	var inFlight sync.Mutex
	return New(func(s *Store, _ *memory.Store, f *Funcs) {
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			if !inFlight.TryLock() {
				go func() { _, _ = c.Run(ctx, s) }() // made, never answered
				return
			}
			go func() {
				defer inFlight.Unlock()
				time.Sleep(time.Millisecond)
				done(c.Run(ctx, s))
			}()
		}
	})
}
