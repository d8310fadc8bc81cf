package main

import (
	"context"
	"errors"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	memcachestore "github.com/lockkit/lock/stores/memcache"
)

func memcachedLibraries() []library {
	return []library{
		{name: "gomemcache raw (floor)", floor: true, open: rawMemcache(false, time.Millisecond)},
		{name: "gomemcache raw, fenced (+ incr)", open: rawMemcache(true, time.Millisecond)},
		{name: "raw meta commands (ms ME c, md C)", open: rawMeta(time.Millisecond)},
		{name: "lockkit", open: lockkitMemcache(false, 128, false)},
		{name: "lockkit WithServer", open: lockkitMemcache(false, 128, true)},
		{name: "lockkit NoFence", open: lockkitMemcache(true, 128, false)},
		{name: "lockkit, 2 idle conns (gomemcache's default)", open: lockkitMemcache(false, 0, false)},
		{name: "lockkit store (Acquire+Release)", open: memcacheStore(false)},
		{name: "lockkit store, cancelable ctx", open: memcacheStore(true)},
	}
}

// memcachedContentionLibraries wait for a lock on memcached, which cannot
// say when one is released: lockkit backs off as its retry policy says;
// the raw pollers retry every 10ms (the simple poller of issue 14) or
// every 1ms.
func memcachedContentionLibraries() []library {
	return []library{
		{name: "lockkit", open: lockkitMemcache(false, 128, false)},
		{name: "lockkit WithServer", open: lockkitMemcache(false, 128, true)},
		{name: "lockkit NoFence", open: lockkitMemcache(true, 128, false)},
		{name: "gomemcache raw poller 10ms", poller: true, open: rawMemcache(false, 10*time.Millisecond)},
		{name: "gomemcache raw poller 1ms", poller: true, open: rawMemcache(false, time.Millisecond)},
	}
}

// newMemcache returns a client that keeps idle idle connections (128 are
// enough for 64 goroutines; 0 keeps gomemcache's default of 2, with which
// most calls dial).
func newMemcache(addr string, idle int) *memcache.Client {
	c := memcache.New(addr)
	c.MaxIdleConns = idle
	c.Timeout = time.Second
	return c
}

// rawMemcacheWorker is add, then gets and cas with a negative expiration
// (a compare-and-delete); fenced, it also draws a fence with incr once it
// holds the lock, as lockkit does. It waits by polling every delay.
type rawMemcacheWorker struct {
	c        *memcache.Client
	fenceKey string // "" when not fenced
	token    []byte
	exp      int32
	delay    time.Duration
	key      string
}

// rawFenceKey is the raw fenced floor's counter: one for the server.
const rawFenceKey = "raw#fence"

func rawMemcache(fenced bool, delay time.Duration) func(e env) (client, error) {
	return func(e env) (client, error) {
		c := newMemcache(e.memcached, 128)
		fenceKey := ""
		if fenced {
			fenceKey = rawFenceKey
			if err := c.Set(&memcache.Item{Key: fenceKey, Value: []byte("1")}); err != nil {
				_ = c.Close()
				return nil, err
			}
		}
		return clientFuncs{
			w: func() worker {
				return &rawMemcacheWorker{c: c, fenceKey: fenceKey, token: []byte(rawToken()), exp: int32((e.ttl + time.Second - 1) / time.Second), delay: delay}
			},
			c: func() { _ = c.Close() },
		}, nil
	}
}

func (w *rawMemcacheWorker) tryLock(_ context.Context, name string) (bool, error) {
	w.key = name
	err := w.c.Add(&memcache.Item{Key: name, Value: w.token, Expiration: w.exp})
	if errors.Is(err, memcache.ErrNotStored) {
		return false, nil
	}
	if err == nil && w.fenceKey != "" {
		_, err = w.c.Increment(w.fenceKey, 1)
	}
	return err == nil, err
}

func (w *rawMemcacheWorker) lock(ctx context.Context, name string) error {
	return poll(ctx, w.delay, func() (bool, error) { return w.tryLock(ctx, name) })
}

func (w *rawMemcacheWorker) unlock(context.Context) error {
	it, err := w.c.Get(w.key)
	if err != nil {
		return err
	}
	if string(it.Value) != string(w.token) {
		return errNotReleased
	}
	it.Value, it.Expiration = nil, -1
	return w.c.CompareAndSwap(it)
}

// lockkitMemcache is a SingleLocker over stores/memcache with its default
// prefix, fenced (the default) or not, on a client keeping idle idle
// connections; withServer names the server with WithServer, so that a
// fenced acquisition sends its add and incr together.
func lockkitMemcache(noFence bool, idle int, withServer bool) func(e env) (client, error) {
	return func(e env) (client, error) {
		c := newMemcache(e.memcached, idle)
		var opts []memcachestore.Option
		if withServer {
			opts = append(opts, memcachestore.WithServer(e.memcached))
		}
		s, err := memcachestore.New(c, opts...)
		return singleClient(s, err, e, e.options(noFence, nil), func() {
			if s != nil {
				_ = s.Close()
			}
			_ = c.Close()
		})
	}
}

// storeWorker calls a lock.Store directly, Acquire and Release with a
// token of its own, always with the client's context (the caller's only
// bounds a wait); it waits by polling every millisecond.
type storeWorker struct {
	ctx   context.Context
	s     lock.Store
	token string
	ttl   time.Duration
	key   string
}

func (w *storeWorker) tryLock(_ context.Context, name string) (bool, error) {
	w.key = name
	err := w.s.Acquire(w.ctx, name, w.token, w.ttl)
	if errors.Is(err, lock.ErrNotAcquired) {
		return false, nil
	}
	return err == nil, err
}

func (w *storeWorker) lock(ctx context.Context, name string) error {
	return poll(ctx, time.Millisecond, func() (bool, error) { return w.tryLock(ctx, name) })
}

func (w *storeWorker) unlock(context.Context) error { return w.s.Release(w.ctx, w.key, w.token) }

// storeClient hands out storeWorkers on s that call it with ctx.
func storeClient(ctx context.Context, s lock.Store, e env, closeFn func()) client {
	return clientFuncs{
		w: func() worker { return &storeWorker{ctx: ctx, s: s, token: rawToken(), ttl: e.ttl} },
		c: closeFn,
	}
}

// memcacheStore calls the store directly, with the caller's
// context.Background, or with a context that can be canceled (and never
// is), which makes the store run each call in a goroutine of its own.
func memcacheStore(cancelable bool) func(e env) (client, error) {
	return func(e env) (client, error) {
		c := newMemcache(e.memcached, 128)
		s, err := memcachestore.New(c)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if cancelable {
			ctx, cancel = context.WithCancel(ctx)
		}
		return storeClient(ctx, s, e, func() { cancel(); _ = c.Close() }), nil
	}
}
