package brokenstore

import (
	"context"
	"sync"
	"time"

	"github.com/lockkit/lock/stores/memory"
)

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

// WaitWakesOnExtend wakes the waiters of a resource when its lock is
// extended, as a store that watches the lock's key for any change does:
// the lock is still held, and every waiter retries at each renewal.
func WaitWakesOnExtend() *Store {
	var n notifier
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		n.release(mem, f, func(r string) string { return r })
		f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			err := mem.Extend(ctx, resource, token, ttl)
			if err == nil {
				n.notify(resource)
			}
			return err
		}
		f.WaitRelease = func(ctx context.Context, resource string) error {
			return n.wait(ctx, mem, resource, resource, 0)
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
			n.notify(topic(resource))
		}
		return err
	}
}

// releasePermit replaces f.ReleasePermit by the memory store's,
// notifying the resource of each permit released.
func (n *notifier) releasePermit(mem *memory.Store, f *PermitFuncs) {
	f.ReleasePermit = func(ctx context.Context, resource, token string) error {
		err := mem.ReleasePermit(ctx, resource, token)
		if err == nil {
			n.notify(resource)
		}
		return err
	}
}

// notify wakes the waiters of topic.
func (n *notifier) notify(topic string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.topics[topic]; ok {
		close(ch)
		delete(n.topics, topic)
	}
}

// next returns a channel closed at the next notification of topic.
func (n *notifier) next(topic string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.topics == nil {
		n.topics = make(map[string]chan struct{})
	}
	ch, ok := n.topics[topic]
	if !ok {
		ch = make(chan struct{})
		n.topics[topic] = ch
	}
	return ch
}

// closedOrDone waits until ch is closed (nil) or ctx ends (its error).
func closedOrDone(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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
		ch := n.next(topic)
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

// WaitBlocksWhenFree waits for the next release without looking at the
// resource first: a WaitRelease of a free resource blocks until its
// context ends.
func WaitBlocksWhenFree() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.WaitRelease = func(ctx context.Context, resource string) error {
			held, err := mem.Exists(ctx, resource)
			if err != nil {
				return err
			}
			if !held {
				<-ctx.Done()
				return ctx.Err()
			}
			return mem.WaitRelease(ctx, resource)
		}
	})
}

// WaitNilOnContextEnd returns nil from a WaitRelease whose context ends
// while it waits, as if the resource had been released: a Lock whose
// deadline passed tries again instead of returning.
func WaitNilOnContextEnd() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.WaitRelease = func(ctx context.Context, resource string) error {
			err := mem.WaitRelease(ctx, resource)
			if err != nil && ctx.Err() != nil {
				return nil
			}
			return err
		}
	})
}

// WaitIgnoresExpiry wakes waiters on a release only, not when the lock
// expires: a waiter sleeps past the death of a holder that never
// released.
func WaitIgnoresExpiry() *Store {
	var n notifier
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		n.release(mem, f, func(r string) string { return r })
		f.WaitRelease = func(ctx context.Context, resource string) error {
			ch := n.next(resource)
			held, err := mem.Exists(ctx, resource)
			if err != nil || !held {
				return err
			}
			return closedOrDone(ctx, ch)
		}
	})
}

// WaitMissesEarlierExpiry hears of a lock's end only as it happens: a
// WaitRelease that begins while the lock is held wakes on its release or
// expiry, but one that begins after the lock expired unreleased finds the
// record the lock left (a store that deletes it on release only) and
// waits for a release that never comes.
func WaitMissesEarlierExpiry() *Store {
	var h holders
	var n notifier
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		f.Release = func(ctx context.Context, resource, token string) error {
			err := mem.Release(ctx, resource, token)
			if err == nil {
				h.set(resource, "")
				n.notify(resource)
			}
			return err
		}
		f.WaitRelease = func(ctx context.Context, resource string) error {
			switch held, err := mem.Exists(ctx, resource); {
			case err != nil:
				return err
			case held:
				return mem.WaitRelease(ctx, resource)
			case h.get(resource) == "":
				return nil
			}
			// The record of a lock that expired unreleased.
			return closedOrDone(ctx, n.next(resource))
		}
	})
}
