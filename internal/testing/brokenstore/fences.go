package brokenstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock/stores/memory"
)

// Stores whose fences are wrong.

// ConstantFence hands out fence 1 for every lock.
func ConstantFence() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			if _, err := mem.AcquireFenced(ctx, resource, token, ttl); err != nil {
				return 0, err
			}
			return 1, nil
		}
	})
}

// FencesForgetExpired keeps each resource's fence counter with its lock
// and starts it again when the lock expires without a release, as a
// store that keeps the counter in the lock's own key would.
func FencesForgetExpired() *Store {
	type counter struct {
		n       uint64
		expires time.Time
	}
	var mu sync.Mutex
	counters := make(map[string]*counter)
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			if err := mem.Acquire(ctx, resource, token, ttl); err != nil {
				return 0, err
			}
			mu.Lock()
			defer mu.Unlock()
			c := counters[resource]
			if c == nil || !time.Now().Before(c.expires) {
				c = &counter{}
				counters[resource] = c
			}
			c.n++
			c.expires = time.Now().Add(ttl)
			return c.n, nil
		}
	})
}

// RaiseFenceIgnored accepts RaiseFence and changes nothing.
func RaiseFenceIgnored() *Store {
	return New(func(_ *Store, _ *memory.Store, f *Funcs) {
		f.RaiseFence = func(ctx context.Context, _ string, _ uint64) error { return ctx.Err() }
	})
}

// FencesWrap takes a raise to any fence and counts on from it in 64
// bits, wrapping around to 0, as a store whose counter is a plain
// uint64 (or memcached's incr) does.
func FencesWrap() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		var mu sync.Mutex
		var last uint64
		f.RaiseFence = func(ctx context.Context, _ string, fence uint64) error {
			mu.Lock()
			defer mu.Unlock()
			last = max(last, fence)
			return ctx.Err()
		}
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			if err := mem.Acquire(ctx, resource, token, ttl); err != nil {
				return 0, err
			}
			mu.Lock()
			defer mu.Unlock()
			last++
			return last, nil
		}
	})
}

// Restartable is a store that can be restarted, as a server without
// persistence: Restart loses every lock.
type Restartable struct {
	*Store
	floor atomic.Uint64 // the highest fence handed out or raised to, kept across restarts
}

// NewRestartable returns a restartable store. Unless forgetFences is set,
// its fences survive a restart, as they must: every fence after it is
// greater than every fence before. With forgetFences, a restart starts
// the fences again from 1.
func NewRestartable(forgetFences bool) *Restartable {
	r := &Restartable{}
	r.Store = New(func(s *Store, _ *memory.Store, f *Funcs) {
		if forgetFences {
			return
		}
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			if err := s.Mem().RaiseFence(ctx, resource, r.floor.Load()); err != nil {
				return 0, err
			}
			fence, err := s.Mem().AcquireFenced(ctx, resource, token, ttl)
			r.raise(fence)
			return fence, err
		}
		f.RaiseFence = func(ctx context.Context, resource string, fence uint64) error {
			err := s.Mem().RaiseFence(ctx, resource, fence)
			if err == nil {
				r.raise(fence)
			}
			return err
		}
	})
	return r
}

func (r *Restartable) raise(fence uint64) {
	for {
		old := r.floor.Load()
		if fence <= old || r.floor.CompareAndSwap(old, fence) {
			return
		}
	}
}

// Restart loses every lock, as a server restarted without persistence.
func (r *Restartable) Restart() { r.mem.Store(memory.New()) }

// RaiseFenceRefreshesLock keeps each resource's fence with its lock and
// writes the lock back, with a TTL of a day, when a raise finds it held,
// as a store whose raise rewrites the whole record (a SET without
// KEEPTTL) does: a MultiLocker's raise keeps a dead holder's lock for a
// day.
func RaiseFenceRefreshesLock() *Store {
	var h holders
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		f.RaiseFence = func(ctx context.Context, resource string, fence uint64) error {
			if err := mem.RaiseFence(ctx, resource, fence); err != nil {
				return err
			}
			_ = mem.Extend(ctx, resource, h.get(resource), 24*time.Hour) // ErrNotHeld if free: nothing to rewrite
			return nil
		}
	})
}

// RaiseFenceLeavesRecord keeps each resource's fence in a record of the
// resource's own, which a raise of a free resource creates, and its
// Exists looks for that record: a resource never locked, once raised,
// reads as held until someone takes it.
func RaiseFenceLeavesRecord() *Store {
	var recs records // raised while free, not taken since
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			fence, err := mem.AcquireFenced(ctx, resource, token, ttl)
			if err == nil {
				recs.set(resource, false)
			}
			return fence, err
		}
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			_, err := f.AcquireFenced(ctx, resource, token, ttl)
			return err
		}
		f.RaiseFence = func(ctx context.Context, resource string, fence uint64) error {
			if err := mem.RaiseFence(ctx, resource, fence); err != nil {
				return err
			}
			if held, err := mem.Exists(ctx, resource); err == nil && !held {
				recs.set(resource, true)
			}
			return nil
		}
		recs.exists(mem, f)
	})
}

// FencedLocksLinger keeps the fence counter of a resource in its lock's
// record and deletes only the token on a release, and its Exists looks
// for the record: a resource released after a fenced acquisition reads as
// held until someone takes it again.
func FencedLocksLinger() *Store {
	var recs records // taken with AcquireFenced last
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			fence, err := mem.AcquireFenced(ctx, resource, token, ttl)
			if err == nil {
				recs.set(resource, true)
			}
			return fence, err
		}
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			err := mem.Acquire(ctx, resource, token, ttl)
			if err == nil {
				recs.set(resource, false)
			}
			return err
		}
		recs.exists(mem, f)
	})
}

// records is the set of resources of which a broken store keeps a record
// that its Exists finds, held or not.
type records struct {
	mu sync.Mutex
	m  map[string]bool
}

// set keeps a record of resource, or deletes it.
func (r *records) set(resource string, kept bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !kept {
		delete(r.m, resource)
		return
	}
	if r.m == nil {
		r.m = make(map[string]bool)
	}
	r.m[resource] = true
}

// exists replaces f.Exists by the memory store's, reading a free resource
// with a record as held.
func (r *records) exists(mem *memory.Store, f *Funcs) {
	f.Exists = func(ctx context.Context, resource string) (bool, error) {
		held, err := mem.Exists(ctx, resource)
		if err != nil || held {
			return held, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.m[resource], nil
	}
}
