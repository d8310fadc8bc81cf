package main

import (
	"context"
	"errors"
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
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
	memcachestore "github.com/lockkit/lock/stores/memcache"
	"github.com/lockkit/lock/stores/memory"
	redisstore "github.com/lockkit/lock/stores/redis"
)

// A library under test is opened as clients: a client holds the
// library's connections, as one process would, and makes mutexes on
// named keys. Every key a client touches starts with env.prefix, which is
// unique to the cell, so leftovers can be counted.
type library struct {
	name  string
	floor bool // the hand-written floor the others are compared with
	open  func(e env) (client, error)
}

type env struct {
	redis     []string // addresses; Redlock uses all, the rest the first
	memcached string
	etcd      []string // the etcd cluster's client endpoints, in the etcd section
	prefix    string
	ttl       time.Duration
}

type client interface {
	mutex(key string) mutex
	close()
}

// mutex is one key of one client. tryLock makes one attempt and reports
// whether it got the key; lock waits as the library does by default (or
// as configured below) until it gets it or ctx ends.
type mutex interface {
	tryLock(ctx context.Context) (bool, error)
	lock(ctx context.Context) error
	unlock(ctx context.Context) error
}

// pollDelay is the retry delay given to the libraries that poll (redsync,
// bsm/redislock): their fastest sensible setting, so that the comparison
// is with the best poller. redsync's default (50-250ms) would hand a
// released lock over a hundred times slower.
const pollDelay = time.Millisecond

const delScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

var errNotReleased = errors.New("not released: the key did not hold the token")

// clientFuncs adapts functions to client.
type clientFuncs struct {
	m func(key string) mutex
	c func()
}

func (c clientFuncs) mutex(key string) mutex { return c.m(key) }
func (c clientFuncs) close() {
	if c.c != nil {
		c.c()
	}
}

func newRueidis(addr string) (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
}

func newGoRedis(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 128})
}

// token returns a token unique to the process for raw floors.
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

// ---- single Redis ----

func redisLibraries() []library {
	return []library{
		{name: "rueidis raw (floor)", floor: true, open: openRawRueidis},
		{name: "go-redis raw", open: openRawGoRedis},
		{name: "lockkit", open: func(e env) (client, error) { return openLockkit(e, false) }},
		{name: "lockkit NoFence", open: func(e env) (client, error) { return openLockkit(e, true) }},
		{name: "lockkit (go-redis)", open: func(e env) (client, error) { return openLockkitGoRedis(e, false) }},
		{name: "lockkit (go-redis) NoFence", open: func(e env) (client, error) { return openLockkitGoRedis(e, true) }},
		{name: "redsync (rueidis)", open: openRedsyncRueidis},
		{name: "redsync (go-redis)", open: openRedsyncGoRedis},
		{name: "bsm/redislock", open: openBSM},
		{name: "rueidislock", open: openRueidislock},
	}
}

// rawRueidis is SET NX PX and a compare-and-delete script by EVALSHA.
type rawRueidis struct {
	c     rueidis.Client
	del   *rueidis.Lua
	key   string
	token string
	ttlMs int64
}

func openRawRueidis(e env) (client, error) {
	c, err := newRueidis(e.redis[0])
	if err != nil {
		return nil, err
	}
	del := rueidis.NewLuaScript(delScript)
	return clientFuncs{
		m: func(key string) mutex {
			return &rawRueidis{c: c, del: del, key: e.prefix + key, token: rawToken(), ttlMs: e.ttl.Milliseconds()}
		},
		c: c.Close,
	}, nil
}

func (m *rawRueidis) tryLock(ctx context.Context) (bool, error) {
	err := m.c.Do(ctx, m.c.B().Set().Key(m.key).Value(m.token).Nx().PxMilliseconds(m.ttlMs).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return err == nil, err
}

func (m *rawRueidis) lock(ctx context.Context) error { return poll(ctx, m.tryLock) }

func (m *rawRueidis) unlock(ctx context.Context) error {
	n, err := m.del.Exec(ctx, m.c, []string{m.key}, []string{m.token}).AsInt64()
	if err == nil && n != 1 {
		err = errNotReleased
	}
	return err
}

// poll retries try every pollDelay until it succeeds or ctx ends.
func poll(ctx context.Context, try func(context.Context) (bool, error)) error {
	for {
		ok, err := try(ctx)
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollDelay):
		}
	}
}

type rawGoRedis struct {
	c     *goredis.Client
	del   *goredis.Script
	key   string
	token string
	ttl   time.Duration
}

func openRawGoRedis(e env) (client, error) {
	c := newGoRedis(e.redis[0])
	del := goredis.NewScript(delScript)
	return clientFuncs{
		m: func(key string) mutex {
			return &rawGoRedis{c: c, del: del, key: e.prefix + key, token: rawToken(), ttl: e.ttl}
		},
		c: func() { _ = c.Close() },
	}, nil
}

func (m *rawGoRedis) tryLock(ctx context.Context) (bool, error) {
	return m.c.SetNX(ctx, m.key, m.token, m.ttl).Result()
}

func (m *rawGoRedis) lock(ctx context.Context) error { return poll(ctx, m.tryLock) }

func (m *rawGoRedis) unlock(ctx context.Context) error {
	n, err := m.del.Run(ctx, m.c, []string{m.key}, m.token).Int64()
	if err == nil && n != 1 {
		err = errNotReleased
	}
	return err
}

// lockkitMutex is a key through a lock.Locker.
type lockkitMutex struct {
	l    lock.Locker
	key  string
	ttl  time.Duration
	held lock.Lock
}

func (m *lockkitMutex) tryLock(ctx context.Context) (bool, error) {
	l, err := m.l.TryLock(ctx, m.key, m.ttl)
	if errors.Is(err, lock.ErrNotAcquired) {
		return false, nil
	}
	m.held = l
	return err == nil, err
}

func (m *lockkitMutex) lock(ctx context.Context) error {
	l, err := m.l.Lock(ctx, m.key, m.ttl)
	m.held = l
	return err
}

func (m *lockkitMutex) unlock(ctx context.Context) error { return m.l.Unlock(ctx, m.held) }

func lockkitClient(l lock.Locker, e env, closeFn func()) client {
	return clientFuncs{
		m: func(key string) mutex { return &lockkitMutex{l: l, key: key, ttl: e.ttl} },
		c: closeFn,
	}
}

func openLockkit(e env, noFence bool) (client, error) {
	c, err := newRueidis(e.redis[0])
	if err != nil {
		return nil, err
	}
	s, err := redisstore.New(c, redisstore.WithPrefix(e.prefix))
	if err != nil {
		c.Close()
		return nil, err
	}
	l, err := lock.NewSingle(s, &lock.Options{NoFence: noFence})
	if err != nil {
		c.Close()
		return nil, err
	}
	return lockkitClient(l, e, c.Close), nil
}

// openLockkitGoRedis is lockkit's go-redis store, on a client made as its
// documentation recommends (ContextTimeoutEnabled) with go-redis raw's pool.
func openLockkitGoRedis(e env, noFence bool) (client, error) {
	c := goredis.NewClient(&goredis.Options{Addr: e.redis[0], PoolSize: 128, ContextTimeoutEnabled: true})
	s, err := goredisstore.New(c, goredisstore.WithPrefix(e.prefix))
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	l, err := lock.NewSingle(s, &lock.Options{NoFence: noFence})
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return lockkitClient(l, e, func() { _ = c.Close() }), nil
}

// redsyncMutex holds two redsync mutexes on the same key: one that tries
// once, one that polls.
type redsyncMutex struct {
	try, wait, locked *redsync.Mutex
}

func redsyncClient(rs *redsync.Redsync, e env, closeFn func()) client {
	return clientFuncs{
		m: func(key string) mutex {
			name := e.prefix + key
			return &redsyncMutex{
				try:  rs.NewMutex(name, redsync.WithExpiry(e.ttl), redsync.WithTries(1)),
				wait: rs.NewMutex(name, redsync.WithExpiry(e.ttl), redsync.WithTries(math.MaxInt32), redsync.WithRetryDelay(pollDelay)),
			}
		},
		c: closeFn,
	}
}

func (m *redsyncMutex) tryLock(ctx context.Context) (bool, error) {
	err := m.try.TryLockContext(ctx)
	var taken *redsync.ErrTaken
	if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
		return false, nil
	}
	if err == nil {
		m.locked = m.try
	}
	return err == nil, err
}

func (m *redsyncMutex) lock(ctx context.Context) error {
	err := m.wait.LockContext(ctx)
	if err == nil {
		m.locked = m.wait
	}
	return err
}

func (m *redsyncMutex) unlock(ctx context.Context) error {
	ok, err := m.locked.UnlockContext(ctx)
	if err == nil && !ok {
		err = errNotReleased
	}
	return err
}

func openRedsyncRueidis(e env) (client, error) {
	c, err := newRueidis(e.redis[0])
	if err != nil {
		return nil, err
	}
	rs := redsync.New(redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c)))
	return redsyncClient(rs, e, c.Close), nil
}

func openRedsyncGoRedis(e env) (client, error) {
	c := newGoRedis(e.redis[0])
	rs := redsync.New(redsyncgoredis.NewPool(c))
	return redsyncClient(rs, e, func() { _ = c.Close() }), nil
}

type bsmMutex struct {
	c    *redislock.Client
	key  string
	ttl  time.Duration
	held *redislock.Lock
}

func openBSM(e env) (client, error) {
	c := newGoRedis(e.redis[0])
	rl := redislock.New(c)
	return clientFuncs{
		m: func(key string) mutex { return &bsmMutex{c: rl, key: e.prefix + key, ttl: e.ttl} },
		c: func() { _ = c.Close() },
	}, nil
}

func (m *bsmMutex) tryLock(ctx context.Context) (bool, error) {
	l, err := m.c.Obtain(ctx, m.key, m.ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return false, nil
	}
	m.held = l
	return err == nil, err
}

func (m *bsmMutex) lock(ctx context.Context) error {
	l, err := m.c.Obtain(ctx, m.key, m.ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(pollDelay)})
	m.held = l
	return err
}

func (m *bsmMutex) unlock(ctx context.Context) error { return m.held.Release(ctx) }

type rueidislockMutex struct {
	l      rueidislock.Locker
	key    string
	cancel context.CancelFunc
}

func openRueidislock(e env) (client, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{e.redis[0]}},
		KeyPrefix:    e.prefix + "rueidislock",
		KeyValidity:  e.ttl,
		KeyMajority:  1, // one key on one server, like the others
	})
	if err != nil {
		return nil, err
	}
	return clientFuncs{
		m: func(key string) mutex { return &rueidislockMutex{l: l, key: key} },
		c: l.Close,
	}, nil
}

func (m *rueidislockMutex) tryLock(ctx context.Context) (bool, error) {
	_, cancel, err := m.l.TryWithContext(ctx, m.key)
	if errors.Is(err, rueidislock.ErrNotLocked) {
		return false, nil
	}
	m.cancel = cancel
	return err == nil, err
}

func (m *rueidislockMutex) lock(ctx context.Context) error {
	_, cancel, err := m.l.WithContext(ctx, m.key)
	m.cancel = cancel
	return err
}

func (m *rueidislockMutex) unlock(context.Context) error {
	m.cancel() // releases, and waits for the release
	return nil
}

// ---- Redlock over five masters ----

func redlockLibraries() []library {
	return []library{
		{name: "raw parallel fan-out (floor)", floor: true, open: func(e env) (client, error) { return openFanout(e, true) }},
		{name: "raw sequential fan-out", open: func(e env) (client, error) { return openFanout(e, false) }},
		{name: "lockkit MultiLocker", open: openLockkitMulti},
		{name: "redsync (5 rueidis pools)", open: openRedsyncMulti},
	}
}

// fanout is SET NX PX on every master, then the compare-and-delete script
// on every master; in parallel (a goroutine per master per call) or one
// master after another. It reports success only when every master
// granted (the keys are distinct, so they all do).
type fanout struct {
	cs       []rueidis.Client
	del      *rueidis.Lua
	parallel bool
	key      string
	token    string
	ttlMs    int64
}

func openFanout(e env, parallel bool) (client, error) {
	cs := make([]rueidis.Client, len(e.redis))
	closeAll := func() {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	}
	for i, addr := range e.redis {
		c, err := newRueidis(addr)
		if err != nil {
			closeAll()
			return nil, err
		}
		cs[i] = c
	}
	del := rueidis.NewLuaScript(delScript)
	return clientFuncs{
		m: func(key string) mutex {
			return &fanout{cs: cs, del: del, parallel: parallel, key: e.prefix + key, token: rawToken(), ttlMs: e.ttl.Milliseconds()}
		},
		c: closeAll,
	}, nil
}

func (f *fanout) each(call func(c rueidis.Client) error) error {
	errs := make([]error, len(f.cs))
	if f.parallel {
		var wg sync.WaitGroup
		for i, c := range f.cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = call(c)
			}()
		}
		wg.Wait()
	} else {
		for i, c := range f.cs {
			errs[i] = call(c)
		}
	}
	return errors.Join(errs...)
}

func (f *fanout) tryLock(ctx context.Context) (bool, error) {
	err := f.each(func(c rueidis.Client) error {
		return c.Do(ctx, c.B().Set().Key(f.key).Value(f.token).Nx().PxMilliseconds(f.ttlMs).Build()).Error()
	})
	return err == nil, err
}

func (f *fanout) lock(ctx context.Context) error { return errors.ErrUnsupported }

func (f *fanout) unlock(ctx context.Context) error {
	return f.each(func(c rueidis.Client) error {
		n, err := f.del.Exec(ctx, c, []string{f.key}, []string{f.token}).AsInt64()
		if err == nil && n != 1 {
			err = errNotReleased
		}
		return err
	})
}

func openLockkitMulti(e env) (client, error) {
	var cs []rueidis.Client
	closeAll := func() {
		for _, c := range cs {
			c.Close()
		}
	}
	var stores []lock.Store
	for _, addr := range e.redis {
		c, err := newRueidis(addr)
		if err != nil {
			closeAll()
			return nil, err
		}
		cs = append(cs, c)
		s, err := redisstore.New(c, redisstore.WithPrefix(e.prefix))
		if err != nil {
			closeAll()
			return nil, err
		}
		stores = append(stores, s)
	}
	l, err := lock.NewMulti(stores, nil)
	if err != nil {
		closeAll()
		return nil, err
	}
	return lockkitClient(l, e, closeAll), nil
}

func openRedsyncMulti(e env) (client, error) {
	var cs []rueidis.Client
	closeAll := func() {
		for _, c := range cs {
			c.Close()
		}
	}
	var pools []redsyncredis.Pool
	for _, addr := range e.redis {
		c, err := newRueidis(addr)
		if err != nil {
			closeAll()
			return nil, err
		}
		cs = append(cs, c)
		pools = append(pools, redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c)))
	}
	return redsyncClient(redsync.New(pools...), e, closeAll), nil
}

// ---- memcached ----

func memcachedLibraries() []library {
	return []library{
		{name: "gomemcache raw (floor)", floor: true, open: openRawMemcache},
		{name: "lockkit store", open: func(e env) (client, error) { return openMemcacheStore(e, false) }},
		{name: "lockkit store, cancelable ctx", open: func(e env) (client, error) { return openMemcacheStore(e, true) }},
		{name: "lockkit SingleLocker", open: func(e env) (client, error) { return openMemcacheLocker(e, 128) }},
		{name: "lockkit SingleLocker, 2 idle conns (gomemcache default)", open: func(e env) (client, error) { return openMemcacheLocker(e, 0) }},
	}
}

// newMemcache returns a client that keeps enough idle connections for 64
// goroutines (with gomemcache's default of 2, most calls dial).
func newMemcache(addr string) *memcache.Client { return newMemcacheIdle(addr, 128) }

// newMemcacheIdle returns a client keeping idle idle connections; 0 keeps
// gomemcache's default (2).
func newMemcacheIdle(addr string, idle int) *memcache.Client {
	c := memcache.New(addr)
	c.MaxIdleConns = idle
	c.Timeout = time.Second
	return c
}

type rawMemcache struct {
	c     *memcache.Client
	key   string
	token []byte
	exp   int32
}

func openRawMemcache(e env) (client, error) {
	c := newMemcache(e.memcached)
	return clientFuncs{
		m: func(key string) mutex {
			return &rawMemcache{c: c, key: e.prefix + key, token: []byte(rawToken()), exp: int32((e.ttl + time.Second - 1) / time.Second)}
		},
		c: func() { _ = c.Close() },
	}, nil
}

func (m *rawMemcache) tryLock(context.Context) (bool, error) {
	err := m.c.Add(&memcache.Item{Key: m.key, Value: m.token, Expiration: m.exp})
	if errors.Is(err, memcache.ErrNotStored) {
		return false, nil
	}
	return err == nil, err
}

func (m *rawMemcache) lock(ctx context.Context) error { return poll(ctx, m.tryLock) }

func (m *rawMemcache) unlock(context.Context) error {
	it, err := m.c.Get(m.key)
	if err != nil {
		return err
	}
	if string(it.Value) != string(m.token) {
		return errNotReleased
	}
	it.Value, it.Expiration = nil, -1
	return m.c.CompareAndSwap(it)
}

type storeMutex struct {
	s     lock.Store
	key   string
	token string
	ttl   time.Duration
	ctx   context.Context // if set, used instead of the caller's
}

func (m *storeMutex) tryLock(ctx context.Context) (bool, error) {
	if m.ctx != nil {
		ctx = m.ctx
	}
	err := m.s.Acquire(ctx, m.key, m.token, m.ttl)
	if errors.Is(err, lock.ErrNotAcquired) {
		return false, nil
	}
	return err == nil, err
}

func (m *storeMutex) lock(ctx context.Context) error { return poll(ctx, m.tryLock) }

func (m *storeMutex) unlock(ctx context.Context) error {
	if m.ctx != nil {
		ctx = m.ctx
	}
	return m.s.Release(ctx, m.key, m.token)
}

// openMemcacheStore calls the store directly, with the caller's
// context.Background, or with a context that can be canceled (and never
// is), which makes the store run each call in a goroutine of its own.
func openMemcacheStore(e env, cancelable bool) (client, error) {
	c := newMemcache(e.memcached)
	s, err := memcachestore.New(c, memcachestore.WithPrefix(e.prefix))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if !cancelable {
		ctx = nil
	}
	return clientFuncs{
		m: func(key string) mutex { return &storeMutex{s: s, key: key, token: rawToken(), ttl: e.ttl, ctx: ctx} },
		c: func() { cancel(); _ = c.Close() },
	}, nil
}

func openMemcacheLocker(e env, idle int) (client, error) {
	c := newMemcacheIdle(e.memcached, idle)
	s, err := memcachestore.New(c, memcachestore.WithPrefix(e.prefix))
	if err != nil {
		return nil, err
	}
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		return nil, err
	}
	return lockkitClient(l, e, func() { _ = c.Close() }), nil
}

// ---- memory ----

func memoryLibraries() []library {
	return []library{
		{name: "map+mutex (floor)", floor: true, open: openMapFloor},
		{name: "lockkit memory store", open: func(e env) (client, error) {
			s := memory.New()
			return clientFuncs{m: func(key string) mutex {
				return &storeMutex{s: s, key: e.prefix + key, token: rawToken(), ttl: e.ttl}
			}}, nil
		}},
		{name: "lockkit SingleLocker", open: func(e env) (client, error) {
			l, err := lock.NewSingle(memory.New(), nil)
			if err != nil {
				return nil, err
			}
			return lockkitClient(l, e, nil), nil
		}},
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

type mapMutex struct {
	f     *mapFloor
	key   string
	token string
}

func openMapFloor(e env) (client, error) {
	f := &mapFloor{seed: maphash.MakeSeed()}
	for i := range f.shards {
		f.shards[i].m = make(map[string]string)
	}
	return clientFuncs{m: func(key string) mutex {
		return &mapMutex{f: f, key: e.prefix + key, token: rawToken()}
	}}, nil
}

func (f *mapFloor) shard(key string) int {
	return int(maphash.String(f.seed, key) % uint64(len(f.shards)))
}

func (m *mapMutex) tryLock(context.Context) (bool, error) {
	s := &m.f.shards[m.f.shard(m.key)]
	s.Lock()
	defer s.Unlock()
	if _, held := s.m[m.key]; held {
		return false, nil
	}
	s.m[m.key] = m.token
	return true, nil
}

func (m *mapMutex) lock(ctx context.Context) error { return poll(ctx, m.tryLock) }

func (m *mapMutex) unlock(context.Context) error {
	s := &m.f.shards[m.f.shard(m.key)]
	s.Lock()
	defer s.Unlock()
	if s.m[m.key] != m.token {
		return errNotReleased
	}
	delete(s.m, m.key)
	return nil
}
