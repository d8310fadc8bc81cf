package main

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/redis/rueidis/rueidislock"

	"github.com/lockkit/lock"
	goredisstore "github.com/lockkit/lock/stores/goredis"
	redisstore "github.com/lockkit/lock/stores/redis"
)

// A library under test is opened as clients: a client holds the
// library's connections, as one process would, and hands out workers. Every
// name a cell locks starts with env.prefix, which is unique to the cell;
// the libraries keep their default key prefixes, as their users would.
type library struct {
	name   string
	floor  bool // the hand-written floor the others are compared with
	poller bool // waits by retrying after a fixed or random delay
	open   func(e env) (client, error)
}

type env struct {
	redis        []string // addresses; Redlock uses all, the rest the first
	memcached    string
	etcd         []string // the etcd cluster's client endpoints, in the etcd section
	prefix       string   // starts every name of the cell
	table        string   // PostgreSQL: the cell's table
	ttl          time.Duration
	storeTimeout time.Duration // lockkit's Options.StoreTimeout; 0 keeps the default

	// Counting leftovers (see leftovers): the prefixes of the other cells
	// that shared the servers, whose keys are theirs, and whether to
	// leave the servers as they are for the next count.
	shared []string
	keep   bool
}

type client interface {
	worker() worker
	close()
}

// worker is what one goroutine locks with. tryLock makes one attempt on
// name and reports whether it got it; lock waits as the library does (or
// as configured below) until it gets it or ctx ends; unlock releases what
// the worker last locked.
type worker interface {
	tryLock(ctx context.Context, name string) (bool, error)
	lock(ctx context.Context, name string) error
	unlock(ctx context.Context) error
}

// fenceReporter is a worker that can tell whether its last lock carried
// a fence (lockkit's), so that a row that should be fenced says whether
// it was.
type fenceReporter interface{ fenced() bool }

const delScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

var errNotReleased = errors.New("not released: the key did not hold the token")

// clientFuncs adapts functions to client.
type clientFuncs struct {
	w func() worker
	c func()
}

func (c clientFuncs) worker() worker { return c.w() }
func (c clientFuncs) close() {
	if c.c != nil {
		c.c()
	}
}

// poll retries try every delay until it succeeds or ctx ends: the waiting
// of the raw pollers.
func poll(ctx context.Context, delay time.Duration, try func() (bool, error)) error {
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		ok, err := try()
		if ok || err != nil {
			return err
		}
		t.Reset(delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// rawToken returns a token unique to the process, for the raw floors.
var tokenSeq struct {
	sync.Mutex
	n int
}

func rawToken() string {
	tokenSeq.Lock()
	defer tokenSeq.Unlock()
	tokenSeq.n++
	return "t" + strconv.Itoa(tokenSeq.n)
}

func newRueidis(addr string) (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
}

func newGoRedis(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 128})
}

// goRedisForStore is a client for stores/goredis, made as its
// documentation recommends (ContextTimeoutEnabled), with go-redis raw's
// pool.
func goRedisForStore(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 128, ContextTimeoutEnabled: true})
}

// ---- lockkit ----

// options returns lockkit's options for a cell.
func (e env) options(noFence bool, hook lock.Hook) *lock.Options {
	return &lock.Options{NoFence: noFence, Hook: hook, StoreTimeout: e.storeTimeout}
}

// lockkitWorker locks through a lock.Locker.
type lockkitWorker struct {
	l    lock.Locker
	ttl  time.Duration
	held lock.Lock
}

func (w *lockkitWorker) tryLock(ctx context.Context, name string) (bool, error) {
	l, err := w.l.TryLock(ctx, name, w.ttl)
	if errors.Is(err, lock.ErrNotAcquired) {
		return false, nil
	}
	w.held = l
	return err == nil, err
}

func (w *lockkitWorker) lock(ctx context.Context, name string) error {
	l, err := w.l.Lock(ctx, name, w.ttl)
	w.held = l
	return err
}

func (w *lockkitWorker) unlock(ctx context.Context) error { return w.l.Unlock(ctx, w.held) }
func (w *lockkitWorker) fenced() bool                     { return w.held.Fence != 0 }

func lockkitClient(l lock.Locker, e env, closeFn func()) client {
	return clientFuncs{
		w: func() worker { return &lockkitWorker{l: l, ttl: e.ttl} },
		c: closeFn,
	}
}

// singleClient is a client of a SingleLocker over s, the store a
// constructor returned with err; on any error it calls closeFn (if any),
// which otherwise closes the client.
func singleClient(s lock.Store, err error, e env, o *lock.Options, closeFn func()) (client, error) {
	var l lock.Locker
	if err == nil {
		l, err = lock.NewSingle(s, o)
	}
	if err != nil {
		if closeFn != nil {
			closeFn()
		}
		return nil, err
	}
	return lockkitClient(l, e, closeFn), nil
}

// ---- single Redis ----

func redisLibraries() []library {
	return []library{
		{name: "rueidis raw (floor)", floor: true, open: rawRueidis(time.Millisecond)},
		{name: "go-redis raw", open: openRawGoRedis},
		{name: "lockkit", open: lockkitRedis(false)},
		{name: "lockkit NoFence", open: lockkitRedis(true)},
		{name: "lockkit (go-redis)", open: lockkitGoRedis(false)},
		{name: "lockkit (go-redis) NoFence", open: lockkitGoRedis(true)},
		{name: "redsync (rueidis)", open: redsyncRueidis(0)},
		{name: "redsync (go-redis)", open: openRedsyncGoRedis},
		{name: "bsm/redislock", open: bsm(0)},
		{name: "rueidislock", open: openRueidislock},
	}
}

// redisContentionLibraries are the single-Redis libraries that wait for a
// lock: lockkit and rueidislock (woken on release), and the pollers at
// 1ms, 10ms and their own default.
func redisContentionLibraries() []library {
	ms := time.Millisecond
	return []library{
		{name: "lockkit", open: lockkitRedis(false)},
		{name: "lockkit NoFence", open: lockkitRedis(true)},
		{name: "rueidislock", open: openRueidislock},
		{name: "redsync 1ms", poller: true, open: redsyncRueidis(ms)},
		{name: "redsync 10ms", poller: true, open: redsyncRueidis(10 * ms)},
		{name: "redsync default (50–250ms)", poller: true, open: redsyncRueidis(0)},
		{name: "bsm/redislock 1ms", poller: true, open: bsm(ms)},
		{name: "bsm/redislock 10ms", poller: true, open: bsm(10 * ms)},
		{name: "bsm/redislock 100ms (its example)", poller: true, open: bsm(100 * ms)},
		{name: "rueidis raw poller 1ms", poller: true, open: rawRueidis(ms)},
		{name: "rueidis raw poller 10ms", poller: true, open: rawRueidis(10 * ms)},
	}
}

// redis64Libraries are those of the 64-worker contention cell: lockkit,
// rueidislock, and the raw poller at 1ms and 10ms.
func redis64Libraries() []library {
	ms := time.Millisecond
	return []library{
		{name: "lockkit", open: lockkitRedis(false)},
		{name: "lockkit NoFence", open: lockkitRedis(true)},
		{name: "rueidislock", open: openRueidislock},
		{name: "rueidis raw poller 1ms", poller: true, open: rawRueidis(ms)},
		{name: "rueidis raw poller 10ms", poller: true, open: rawRueidis(10 * ms)},
	}
}

// rawRueidisWorker is SET NX PX and a compare-and-delete script by
// EVALSHA; it waits by polling every delay.
type rawRueidisWorker struct {
	c     rueidis.Client
	del   *rueidis.Lua
	delay time.Duration
	token string
	ttlMs int64
	key   string
}

func rawRueidis(delay time.Duration) func(e env) (client, error) {
	return func(e env) (client, error) {
		c, err := newRueidis(e.redis[0])
		if err != nil {
			return nil, err
		}
		del := rueidis.NewLuaScript(delScript)
		return clientFuncs{
			w: func() worker {
				return &rawRueidisWorker{c: c, del: del, delay: delay, token: rawToken(), ttlMs: e.ttl.Milliseconds()}
			},
			c: c.Close,
		}, nil
	}
}

func (w *rawRueidisWorker) tryLock(ctx context.Context, name string) (bool, error) {
	w.key = name
	err := w.c.Do(ctx, w.c.B().Set().Key(name).Value(w.token).Nx().PxMilliseconds(w.ttlMs).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return err == nil, err
}

func (w *rawRueidisWorker) lock(ctx context.Context, name string) error {
	return poll(ctx, w.delay, func() (bool, error) { return w.tryLock(ctx, name) })
}

func (w *rawRueidisWorker) unlock(ctx context.Context) error {
	n, err := w.del.Exec(ctx, w.c, []string{w.key}, []string{w.token}).AsInt64()
	if err == nil && n != 1 {
		err = errNotReleased
	}
	return err
}

// rawGoRedisWorker is SetNX and the compare-and-delete script on go-redis.
type rawGoRedisWorker struct {
	c     *goredis.Client
	del   *goredis.Script
	token string
	ttl   time.Duration
	key   string
}

func openRawGoRedis(e env) (client, error) {
	c := newGoRedis(e.redis[0])
	del := goredis.NewScript(delScript)
	return clientFuncs{
		w: func() worker { return &rawGoRedisWorker{c: c, del: del, token: rawToken(), ttl: e.ttl} },
		c: func() { _ = c.Close() },
	}, nil
}

func (w *rawGoRedisWorker) tryLock(ctx context.Context, name string) (bool, error) {
	w.key = name
	return w.c.SetNX(ctx, name, w.token, w.ttl).Result()
}

func (w *rawGoRedisWorker) lock(ctx context.Context, name string) error {
	return poll(ctx, time.Millisecond, func() (bool, error) { return w.tryLock(ctx, name) })
}

func (w *rawGoRedisWorker) unlock(ctx context.Context) error {
	n, err := w.del.Run(ctx, w.c, []string{w.key}, w.token).Int64()
	if err == nil && n != 1 {
		err = errNotReleased
	}
	return err
}

// lockkitRedis is a SingleLocker over stores/redis with its default
// prefix, fenced (the default) or not.
func lockkitRedis(noFence bool) func(e env) (client, error) {
	return func(e env) (client, error) {
		c, err := newRueidis(e.redis[0])
		if err != nil {
			return nil, err
		}
		s, err := redisstore.New(c)
		return singleClient(s, err, e, e.options(noFence, nil), c.Close)
	}
}

// lockkitGoRedis is a SingleLocker over stores/goredis, on a client made
// for it (see goRedisForStore).
func lockkitGoRedis(noFence bool) func(e env) (client, error) {
	return func(e env) (client, error) {
		c := goRedisForStore(e.redis[0])
		s, err := goredisstore.New(c)
		return singleClient(s, err, e, e.options(noFence, nil), func() { _ = c.Close() })
	}
}

// redsyncWorker keeps redsync's mutexes for the name it last locked: one
// that tries once, one that waits with the worker's retry delay (0:
// redsync's default, a random 50-250ms) and no limit on tries. A new name
// takes new mutexes, as redsync's users make them.
type redsyncWorker struct {
	rs                *redsync.Redsync
	ttl, delay        time.Duration
	name              string
	try, wait, locked *redsync.Mutex
}

func redsyncClient(rs *redsync.Redsync, e env, delay time.Duration, closeFn func()) client {
	return clientFuncs{
		w: func() worker { return &redsyncWorker{rs: rs, ttl: e.ttl, delay: delay} },
		c: closeFn,
	}
}

func (w *redsyncWorker) forName(name string) {
	if name != w.name {
		w.name, w.try, w.wait = name, nil, nil
	}
}

func (w *redsyncWorker) tryLock(ctx context.Context, name string) (bool, error) {
	w.forName(name)
	if w.try == nil {
		w.try = w.rs.NewMutex(name, redsync.WithExpiry(w.ttl), redsync.WithTries(1))
	}
	err := w.try.TryLockContext(ctx)
	var taken *redsync.ErrTaken
	if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
		return false, nil
	}
	if err == nil {
		w.locked = w.try
	}
	return err == nil, err
}

func (w *redsyncWorker) lock(ctx context.Context, name string) error {
	w.forName(name)
	if w.wait == nil {
		opts := []redsync.Option{redsync.WithExpiry(w.ttl), redsync.WithTries(math.MaxInt32)}
		if w.delay > 0 {
			opts = append(opts, redsync.WithRetryDelay(w.delay))
		}
		w.wait = w.rs.NewMutex(name, opts...)
	}
	err := w.wait.LockContext(ctx)
	if err == nil {
		w.locked = w.wait
	}
	return err
}

func (w *redsyncWorker) unlock(ctx context.Context) error {
	ok, err := w.locked.UnlockContext(ctx)
	if err == nil && !ok {
		err = errNotReleased
	}
	return err
}

func redsyncRueidis(delay time.Duration) func(e env) (client, error) {
	return func(e env) (client, error) {
		c, err := newRueidis(e.redis[0])
		if err != nil {
			return nil, err
		}
		rs := redsync.New(redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c)))
		return redsyncClient(rs, e, delay, c.Close), nil
	}
}

func openRedsyncGoRedis(e env) (client, error) {
	c := newGoRedis(e.redis[0])
	rs := redsync.New(redsyncgoredis.NewPool(c))
	return redsyncClient(rs, e, time.Millisecond, func() { _ = c.Close() }), nil
}

// bsmWorker is bsm/redislock; it waits with a linear backoff of delay
// (its default is not to wait at all).
type bsmWorker struct {
	c    *redislock.Client
	ttl  time.Duration
	wait *redislock.Options
	held *redislock.Lock
}

func bsm(delay time.Duration) func(e env) (client, error) {
	return func(e env) (client, error) {
		c := newGoRedis(e.redis[0])
		rl := redislock.New(c)
		wait := &redislock.Options{RetryStrategy: redislock.LinearBackoff(delay)}
		return clientFuncs{
			w: func() worker { return &bsmWorker{c: rl, ttl: e.ttl, wait: wait} },
			c: func() { _ = c.Close() },
		}, nil
	}
}

func (w *bsmWorker) tryLock(ctx context.Context, name string) (bool, error) {
	l, err := w.c.Obtain(ctx, name, w.ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return false, nil
	}
	w.held = l
	return err == nil, err
}

func (w *bsmWorker) lock(ctx context.Context, name string) error {
	l, err := w.c.Obtain(ctx, name, w.ttl, w.wait)
	w.held = l
	return err
}

func (w *bsmWorker) unlock(ctx context.Context) error { return w.held.Release(ctx) }

// rueidislockWorker is rueidis's own locker, waiting as it does (woken
// by a notification on release).
type rueidislockWorker struct {
	l      rueidislock.Locker
	cancel context.CancelFunc
}

func openRueidislock(e env) (client, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{e.redis[0]}},
		KeyValidity:  e.ttl,
		KeyMajority:  1, // one key on one server, like the others
	})
	if err != nil {
		return nil, err
	}
	return clientFuncs{
		w: func() worker { return &rueidislockWorker{l: l} },
		c: l.Close,
	}, nil
}

func (w *rueidislockWorker) tryLock(ctx context.Context, name string) (bool, error) {
	_, cancel, err := w.l.TryWithContext(ctx, name)
	if errors.Is(err, rueidislock.ErrNotLocked) {
		return false, nil
	}
	w.cancel = cancel
	return err == nil, err
}

func (w *rueidislockWorker) lock(ctx context.Context, name string) error {
	_, cancel, err := w.l.WithContext(ctx, name)
	w.cancel = cancel
	return err
}

func (w *rueidislockWorker) unlock(context.Context) error {
	w.cancel() // releases, and waits for the release
	return nil
}

// ---- Redlock over five masters ----

func redlockLibraries() []library {
	return []library{
		{name: "raw parallel fan-out (floor)", floor: true, open: fanout(true)},
		{name: "raw sequential fan-out", open: fanout(false)},
		{name: "lockkit MultiLocker", open: lockkitMulti(false)},
		{name: "lockkit MultiLocker NoFence", open: lockkitMulti(true)},
		{name: "redsync (5 rueidis pools)", open: openRedsyncMulti},
	}
}

// fanoutWorker is SET NX PX on every master, then the compare-and-delete
// script on every master; in parallel (a goroutine per master per call)
// or one master after another. It reports success only when every master
// granted (no one else uses its names, so they all do).
type fanoutWorker struct {
	cs       []rueidis.Client
	del      *rueidis.Lua
	parallel bool
	token    string
	ttlMs    int64
	key      string
}

func fanout(parallel bool) func(e env) (client, error) {
	return func(e env) (client, error) {
		cs, closeAll, err := rueidisClients(e.redis)
		if err != nil {
			return nil, err
		}
		del := rueidis.NewLuaScript(delScript)
		return clientFuncs{
			w: func() worker {
				return &fanoutWorker{cs: cs, del: del, parallel: parallel, token: rawToken(), ttlMs: e.ttl.Milliseconds()}
			},
			c: closeAll,
		}, nil
	}
}

// rueidisClients returns a client for each address, and a function that
// closes them all.
func rueidisClients(addrs []string) ([]rueidis.Client, func(), error) {
	var cs []rueidis.Client
	closeAll := func() {
		for _, c := range cs {
			c.Close()
		}
	}
	for _, addr := range addrs {
		c, err := newRueidis(addr)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cs = append(cs, c)
	}
	return cs, closeAll, nil
}

func (w *fanoutWorker) each(call func(c rueidis.Client) error) error {
	errs := make([]error, len(w.cs))
	if w.parallel {
		var wg sync.WaitGroup
		for i, c := range w.cs {
			wg.Go(func() { errs[i] = call(c) })
		}
		wg.Wait()
	} else {
		for i, c := range w.cs {
			errs[i] = call(c)
		}
	}
	return errors.Join(errs...)
}

func (w *fanoutWorker) tryLock(ctx context.Context, name string) (bool, error) {
	w.key = name
	err := w.each(func(c rueidis.Client) error {
		return c.Do(ctx, c.B().Set().Key(name).Value(w.token).Nx().PxMilliseconds(w.ttlMs).Build()).Error()
	})
	return err == nil, err
}

func (w *fanoutWorker) lock(context.Context, string) error { return errors.ErrUnsupported }

func (w *fanoutWorker) unlock(ctx context.Context) error {
	return w.each(func(c rueidis.Client) error {
		n, err := w.del.Exec(ctx, c, []string{w.key}, []string{w.token}).AsInt64()
		if err == nil && n != 1 {
			err = errNotReleased
		}
		return err
	})
}

// lockkitMulti is a MultiLocker over five stores/redis stores. Without
// NoFence it fences when every store can raise fences (lock.FenceRaiser);
// the table's "fenced" column says whether its locks carried one.
func lockkitMulti(noFence bool) func(e env) (client, error) {
	return func(e env) (client, error) {
		cs, closeAll, err := rueidisClients(e.redis)
		if err != nil {
			return nil, err
		}
		var stores []lock.Store
		for _, c := range cs {
			s, err := redisstore.New(c)
			if err != nil {
				closeAll()
				return nil, err
			}
			stores = append(stores, s)
		}
		l, err := lock.NewMulti(stores, e.options(noFence, nil))
		if err != nil {
			closeAll()
			return nil, err
		}
		return lockkitClient(l, e, closeAll), nil
	}
}

func openRedsyncMulti(e env) (client, error) {
	cs, closeAll, err := rueidisClients(e.redis)
	if err != nil {
		return nil, err
	}
	var pools []redsyncredis.Pool
	for _, c := range cs {
		pools = append(pools, redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c)))
	}
	return redsyncClient(redsync.New(pools...), e, time.Millisecond, closeAll), nil
}
