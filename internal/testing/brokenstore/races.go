package brokenstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Stores that are wrong only when calls race, or that leave goroutines
// behind.

// ReleaseChecksThenDeletes releases in two steps, a check of the token
// and then, window later, an unconditional delete (GET, then DEL): a
// release at the moment the lock expires deletes the lock of the next
// owner if it took the resource in between.
func ReleaseChecksThenDeletes(window time.Duration) *Store {
	var h holders
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		f.Release = func(ctx context.Context, resource, token string) error {
			held, err := mem.Exists(ctx, resource)
			if err != nil {
				return err
			}
			if !held || h.get(resource) != token {
				return lock.ErrNotHeld
			}
			time.Sleep(window)
			mem.Expire(resource)
			return nil
		}
	})
}

// FenceBeforeLock draws the fence before it takes the lock, not with it:
// two acquisitions can take their fences in one order and the lock in
// the other.
func FenceBeforeLock() *Store {
	return New(func(s *Store, mem *memory.Store, f *Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			fence := s.fences.Add(1)
			time.Sleep(rand.N(time.Millisecond))
			if err := mem.Acquire(ctx, resource, token, ttl); err != nil {
				return 0, err
			}
			return fence, nil
		}
	})
}

// LeaksGoroutine leaves a goroutine blocked for good behind every
// Release.
func LeaksGoroutine() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Release = func(ctx context.Context, resource, token string) error {
			never := make(chan struct{})
			go func() { <-never }()
			return mem.Release(ctx, resource, token)
		}
	})
}

// Stores whose WaitRelease is wrong.

// WaitReturnsAtOnce returns from WaitRelease at once, held or not.
func WaitReturnsAtOnce() *Store {
	return New(func(_ *Store, _ *memory.Store, f *Funcs) {
		f.WaitRelease = func(ctx context.Context, _ string) error { return ctx.Err() }
	})
}

// WaitWakesOnAnyRelease wakes every waiter on the release of any
// resource.
func WaitWakesOnAnyRelease() *Store {
	var n notifier
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		n.release(mem, f, func(string) string { return "" })
		f.WaitRelease = func(ctx context.Context, resource string) error {
			return n.wait(ctx, mem, resource, "", 0)
		}
	})
}

// WaitMissesRelease looks at the resource and only gap later starts
// listening for its release: a release in between is missed, and the
// waiter sleeps on until the lock's TTL would have run out.
func WaitMissesRelease(gap time.Duration) *Store {
	var n notifier
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		n.release(mem, f, func(r string) string { return r })
		f.WaitRelease = func(ctx context.Context, resource string) error {
			return n.wait(ctx, mem, resource, resource, gap)
		}
	})
}

// notifier wakes waiters on release, by topic.
type notifier struct {
	mu     sync.Mutex
	topics map[string]chan struct{}
}

// release replaces f.Release by the memory store's, notifying the topic
// of the released resource.
func (n *notifier) release(mem *memory.Store, f *Funcs, topic func(string) string) {
	f.Release = func(ctx context.Context, resource, token string) error {
		err := mem.Release(ctx, resource, token)
		if err == nil {
			n.mu.Lock()
			if ch, ok := n.topics[topic(resource)]; ok {
				close(ch)
				delete(n.topics, topic(resource))
			}
			n.mu.Unlock()
		}
		return err
	}
}

// wait returns when resource is free, gap after it looked: on a
// notification of topic, or when the lock's TTL (as read before the gap)
// runs out.
func (n *notifier) wait(ctx context.Context, mem *memory.Store, resource, topic string, gap time.Duration) error {
	for {
		left, held, err := mem.TTL(ctx, resource)
		if err != nil || !held {
			return err
		}
		time.Sleep(gap)
		n.mu.Lock()
		if n.topics == nil {
			n.topics = make(map[string]chan struct{})
		}
		ch, ok := n.topics[topic]
		if !ok {
			ch = make(chan struct{})
			n.topics[topic] = ch
		}
		n.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-ch:
			t.Stop()
			return nil
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

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
