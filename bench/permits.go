package main

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	goredisstore "github.com/lockkit/lock/stores/goredis"
	redisstore "github.com/lockkit/lock/stores/redis"
)

// The permit sections measure counted permits (issue #17) on a single
// Redis: lockkit's native permits (lock.Permitter: one script per
// acquisition whatever the limit) against a redsync-style emulation, which
// takes one of limit plain locks, name:0 to name:limit-1, trying them in
// turn. No Go library served by the module proxy offers a Redis
// semaphore to compare with (none in the proxy's list on 2026-11-23).
//
// The "lockkit permits" workers use the stores' Permitter directly: what
// is measured is the store's cost per permit. The "lockkit Semaphore"
// workers take permits as users do, through a lock.Semaphore over a
// SingleLocker (which uses the same native permits).

// permitLimit is the limit of the uncontended permit sections, and
// contendedPermitLimit that of the contention section.
const (
	permitLimit          = 8
	contendedPermitLimit = 4
)

// limiter is a worker that takes one of several permits: contend lets
// that many in at once.
type limiter interface{ limit() int }

// holdersAtOnce returns how many of w's kind may hold a name at once.
func holdersAtOnce(w worker) int {
	if l, ok := w.(limiter); ok {
		return l.limit()
	}
	return 1
}

// permitLibraries are the libraries of the uncontended permit sections;
// with busy, a worker first has limit-1 of the permits of each name it
// uses taken under other tokens, so that one permit is free.
func permitLibraries(limit int, busy bool) []library {
	return []library{
		{name: "rueidis raw lock (floor)", floor: true, open: rawRueidis(time.Millisecond)},
		{name: "lockkit permits", open: lockkitPermits(limit, busy, false)},
		{name: "lockkit permits (go-redis)", open: lockkitPermits(limit, busy, true)},
		{name: "lockkit Semaphore", open: lockkitSemaphore(limit, busy)},
		{name: "redsync-style: " + strconv.Itoa(limit) + " locks in turn (rueidis)", open: emulatedPermits(limit, busy, time.Millisecond)},
	}
}

// permitContentionLibraries are the libraries of the permit contention
// section: lockkit's permits woken on release (WaitPermit), and the
// emulation polling every 1ms and 10ms.
func permitContentionLibraries() []library {
	return []library{
		{name: "lockkit permits", open: lockkitPermits(contendedPermitLimit, false, false)},
		{name: "lockkit permits (go-redis)", open: lockkitPermits(contendedPermitLimit, false, true)},
		{name: "lockkit Semaphore", open: lockkitSemaphore(contendedPermitLimit, false)},
		{name: "redsync-style, polls 1ms (rueidis)", poller: true, open: emulatedPermits(contendedPermitLimit, false, time.Millisecond)},
		{name: "redsync-style, polls 10ms (rueidis)", poller: true, open: emulatedPermits(contendedPermitLimit, false, 10*time.Millisecond)},
	}
}

// permitStore is what the permit workers need of a lockkit store.
type permitStore interface {
	lock.Permitter
	lock.PermitWaiter
}

// busyHolders takes, once per name, the permits a busy worker leaves
// taken for others, and gives them back when the client closes.
type busyHolders struct {
	mu    sync.Mutex
	names map[string]bool
	undo  []func()
}

// prepare runs take for name unless it ran already; take returns how to
// undo it.
func (b *busyHolders) prepare(name string, take func() (func(), error)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.names[name] {
		return nil
	}
	undo, err := take()
	if err != nil {
		return err
	}
	if b.names == nil {
		b.names = make(map[string]bool)
	}
	b.names[name] = true
	b.undo = append(b.undo, undo)
	return nil
}

func (b *busyHolders) release() {
	for _, u := range b.undo {
		u()
	}
}

// lockkitPermits opens lockkit's Redis store, through rueidis or go-redis.
func lockkitPermits(limit int, busy, goRedis bool) func(e env) (client, error) {
	return func(e env) (client, error) {
		var (
			s       permitStore
			closeFn func()
		)
		if goRedis {
			c := goRedisForStore(e.redis[0])
			st, err := goredisstore.New(c)
			if err != nil {
				_ = c.Close()
				return nil, err
			}
			s, closeFn = st, func() { _ = c.Close() }
		} else {
			c, err := newRueidis(e.redis[0])
			if err != nil {
				return nil, err
			}
			st, err := redisstore.New(c)
			if err != nil {
				c.Close()
				return nil, err
			}
			s, closeFn = st, c.Close
		}
		b := &busyHolders{}
		return clientFuncs{
			w: func() worker {
				return &permitWorker{s: s, max: limit, ttl: e.ttl, token: rawToken(), busy: busy, holders: b}
			},
			c: func() { b.release(); closeFn() },
		}, nil
	}
}

// lockkitSemaphore is a lock.Semaphore of limit over a SingleLocker over
// stores/redis.
func lockkitSemaphore(limit int, busy bool) func(e env) (client, error) {
	return func(e env) (client, error) {
		c, err := newRueidis(e.redis[0])
		if err != nil {
			return nil, err
		}
		s, err := redisstore.New(c)
		var sem *lock.Semaphore
		if err == nil {
			var l *lock.SingleLocker
			if l, err = lock.NewSingle(s, e.options(false, nil)); err == nil {
				sem, err = lock.NewSemaphore(l, limit)
			}
		}
		if err != nil {
			c.Close()
			return nil, err
		}
		b := &busyHolders{}
		return clientFuncs{
			w: func() worker {
				return &semaphoreWorker{
					lockkitWorker: lockkitWorker{l: sem, ttl: e.ttl},
					max:           limit, busy: busy, holders: b,
					others: &permitWorker{s: s, max: limit, token: rawToken()},
				}
			},
			c: func() { b.release(); c.Close() },
		}, nil
	}
}

// semaphoreWorker takes permits through a lock.Semaphore.
type semaphoreWorker struct {
	lockkitWorker
	max     int
	busy    bool
	holders *busyHolders
	others  *permitWorker // takes the permits a busy worker leaves to others
}

func (w *semaphoreWorker) limit() int { return w.max }

func (w *semaphoreWorker) tryLock(ctx context.Context, name string) (bool, error) {
	if w.busy {
		if err := w.holders.prepare(name, func() (func(), error) { return w.others.takeOthers(ctx, name) }); err != nil {
			return false, err
		}
	}
	return w.lockkitWorker.tryLock(ctx, name)
}

// permitWorker takes permits through a lockkit store.
type permitWorker struct {
	s       permitStore
	max     int
	ttl     time.Duration
	token   string // the worker's; each permit adds a number
	n       int
	held    string // the name and token of the last permit
	heldTok string
	fence   uint64
	busy    bool
	holders *busyHolders
}

func (w *permitWorker) limit() int   { return w.max }
func (w *permitWorker) fenced() bool { return w.fence != 0 }

func (w *permitWorker) tryLock(ctx context.Context, name string) (bool, error) {
	if w.busy {
		if err := w.holders.prepare(name, func() (func(), error) { return w.takeOthers(ctx, name) }); err != nil {
			return false, err
		}
	}
	w.n++
	tok := w.token + "." + strconv.Itoa(w.n)
	fence, err := w.s.AcquirePermit(ctx, name, tok, w.max, w.ttl)
	if errors.Is(err, lock.ErrNotAcquired) {
		return false, nil
	}
	w.held, w.heldTok, w.fence = name, tok, fence
	return err == nil, err
}

// takeOthers takes limit-1 permits on name under other tokens.
func (w *permitWorker) takeOthers(ctx context.Context, name string) (func(), error) {
	var toks []string
	for i := range w.max - 1 {
		tok := w.token + ".other" + strconv.Itoa(i)
		if _, err := w.s.AcquirePermit(ctx, name, tok, w.max, time.Hour); err != nil {
			return nil, err
		}
		toks = append(toks, tok)
	}
	return func() {
		for _, tok := range toks {
			_ = w.s.ReleasePermit(context.Background(), name, tok)
		}
	}, nil
}

// lock takes a permit, waiting to be woken by a release (or an expiry)
// while every permit is held.
func (w *permitWorker) lock(ctx context.Context, name string) error {
	for {
		ok, err := w.tryLock(ctx, name)
		if ok || err != nil {
			return err
		}
		if err := w.s.WaitPermit(ctx, name); err != nil {
			return err
		}
	}
}

func (w *permitWorker) unlock(ctx context.Context) error {
	return w.s.ReleasePermit(ctx, w.held, w.heldTok)
}

// emulatedPermits is the redsync-style emulation over rueidis: limit plain
// locks, name:0 to name:limit-1, tried in turn with SET NX PX until one is
// free; released with the compare-and-delete script; waited for by polling
// every delay.
func emulatedPermits(limit int, busy bool, delay time.Duration) func(e env) (client, error) {
	return func(e env) (client, error) {
		c, err := newRueidis(e.redis[0])
		if err != nil {
			return nil, err
		}
		del := rueidis.NewLuaScript(delScript)
		b := &busyHolders{}
		return clientFuncs{
			w: func() worker {
				return &emulatedWorker{c: c, del: del, max: limit, delay: delay, token: rawToken(), ttlMs: e.ttl.Milliseconds(), busy: busy, holders: b}
			},
			c: func() { b.release(); c.Close() },
		}, nil
	}
}

type emulatedWorker struct {
	c       rueidis.Client
	del     *rueidis.Lua
	max     int
	delay   time.Duration
	token   string
	ttlMs   int64
	key     string
	busy    bool
	holders *busyHolders
}

func (w *emulatedWorker) limit() int { return w.max }

func (w *emulatedWorker) tryLock(ctx context.Context, name string) (bool, error) {
	if w.busy {
		if err := w.holders.prepare(name, func() (func(), error) { return w.takeOthers(ctx, name) }); err != nil {
			return false, err
		}
	}
	for i := range w.max {
		key := name + ":" + strconv.Itoa(i)
		err := w.c.Do(ctx, w.c.B().Set().Key(key).Value(w.token).Nx().PxMilliseconds(w.ttlMs).Build()).Error()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		w.key = key
		return true, nil
	}
	return false, nil
}

// takeOthers takes the first limit-1 locks of name under another token.
func (w *emulatedWorker) takeOthers(ctx context.Context, name string) (func(), error) {
	var keys []string
	for i := range w.max - 1 {
		key := name + ":" + strconv.Itoa(i)
		if err := w.c.Do(ctx, w.c.B().Set().Key(key).Value("other").Nx().Ex(time.Hour).Build()).Error(); err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	return func() { w.c.Do(context.Background(), w.c.B().Del().Key(keys...).Build()) }, nil
}

func (w *emulatedWorker) lock(ctx context.Context, name string) error {
	return poll(ctx, w.delay, func() (bool, error) { return w.tryLock(ctx, name) })
}

func (w *emulatedWorker) unlock(ctx context.Context) error {
	n, err := w.del.Exec(ctx, w.c, []string{w.key}, []string{w.token}).AsInt64()
	if err == nil && n != 1 {
		err = errNotReleased
	}
	return err
}
