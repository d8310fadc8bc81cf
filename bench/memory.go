package main

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

func memoryLibraries() []library {
	return []library{
		{name: "map+mutex (floor)", floor: true, open: openMapFloor},
		{name: "lockkit memory store", open: func(e env) (client, error) {
			return storeClient(context.Background(), memory.New(), e, nil), nil
		}},
		{name: "lockkit SingleLocker", open: memoryLocker(nil)},
		{name: "lockkit SingleLocker, no-op Hook", open: memoryLocker(noopHook{})},
	}
}

// noopHook is a Hook that does nothing: what a hook costs the lockers
// themselves.
type noopHook struct{}

func (noopHook) Observe(context.Context, lock.Event) {}

// memoryLocker is a SingleLocker over the memory store, with hook.
func memoryLocker(hook lock.Hook) func(e env) (client, error) {
	return func(e env) (client, error) {
		return singleClient(memory.New(), nil, e, e.options(false, hook), nil)
	}
}

// mapFloor is the least an in-memory lock table does: a map per shard
// under a mutex, set if absent, delete if the token matches. No TTL.
type mapFloor struct {
	seed   maphash.Seed
	shards [64]struct {
		sync.Mutex
		m map[string]string
		_ [40]byte
	}
}

type mapWorker struct {
	f     *mapFloor
	token string
	key   string
}

func openMapFloor(env) (client, error) {
	f := &mapFloor{seed: maphash.MakeSeed()}
	for i := range f.shards {
		f.shards[i].m = make(map[string]string)
	}
	return clientFuncs{w: func() worker { return &mapWorker{f: f, token: rawToken()} }}, nil
}

func (f *mapFloor) shard(key string) int {
	return int(maphash.String(f.seed, key) % uint64(len(f.shards)))
}

func (w *mapWorker) tryLock(_ context.Context, name string) (bool, error) {
	w.key = name
	s := &w.f.shards[w.f.shard(name)]
	s.Lock()
	defer s.Unlock()
	if _, held := s.m[name]; held {
		return false, nil
	}
	s.m[name] = w.token
	return true, nil
}

func (w *mapWorker) lock(ctx context.Context, name string) error {
	return poll(ctx, time.Millisecond, func() (bool, error) { return w.tryLock(ctx, name) })
}

func (w *mapWorker) unlock(context.Context) error {
	s := &w.f.shards[w.f.shard(w.key)]
	s.Lock()
	defer s.Unlock()
	if s.m[w.key] != w.token {
		return errNotReleased
	}
	delete(s.m, w.key)
	return nil
}
