package memcache

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/storecall"
)

// Store is a lock store on a memcached server, reached through a
// gomemcache client. Create it with New; it is safe for concurrent use.
// The zero value is not usable (its methods panic).
type Store struct {
	client     *gomemcache.Client
	prefix     string
	name       string
	fenceKey   string        // the key of the fence counter
	fenceGuard time.Duration // see WithFenceGuard
	pending    pending       // abandoned adds still on their way
	fences     fenceQueue    // acquisitions waiting to share an incr
	server     *string       // see WithServer
	pipe       *pipe         // connections of the store's own to server, if named
	cas        casBook       // the CAS ids of the locks taken through pipe

	// beforeCAS, when set (by tests only), runs in Release and Extend
	// between the gets and the cas, to open the race window at will.
	beforeCAS func(key string)
	// beforeFenceIncr, when set (by tests only), runs before each incr of
	// fenced acquisitions, with the number of fences it draws.
	beforeFenceIncr func(n int)
}

var (
	_ lock.Store       = (*Store)(nil)
	_ lock.Extender    = (*Store)(nil)
	_ lock.Granular    = (*Store)(nil)
	_ lock.FenceRaiser = (*Store)(nil)
)

// DefaultPrefix is the key prefix of a Store made without WithPrefix.
const DefaultPrefix = "lock:"

// Granularity is the store's TTL granularity: memcached counts whole
// seconds, and its clock ticks once a second, so an item may expire up to
// a second before its TTL says.
const Granularity = time.Second

// casAttempts bounds the gets+cas rounds of Release and Extend when the
// item changes between the two while still holding the caller's token
// (another Extend with the same token, from another goroutine or process).
const casAttempts = 8

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of every key the store writes; the default is
// DefaultPrefix. Give each application (or test) sharing a server its own
// prefix; two stores share no keys as long as neither prefix is a prefix
// of the other. It must be at most MaxPrefixLen bytes with no spaces or
// control characters.
func WithPrefix(prefix string) Option { return func(s *Store) { s.prefix = prefix } }

// WithName names the store in String, and so in the errors of a
// lock.MultiLocker; the default is "memcache". The name may not be empty.
func WithName(name string) Option { return func(s *Store) { s.name = name } }

// WithServer names the address of the client's one memcached server
// ("host:port", or a Unix socket's path), as given to gomemcache. The
// store then takes locks on a connection of its own to addr: a fenced
// lock in one round trip instead of two (the add and the incr that draws
// the fence sent together), and, on memcached 1.6.18 or later, a lock's
// Release in one round trip instead of two (a delete by the CAS id its
// acquisition returned); see the package documentation on fences and on
// own connections. Every other request goes through the client. Name it
// only when the client has that one server, which must hold both the
// locks and the fence counter. The store's connections follow the
// client's Timeout, MaxIdleConns and DialContext; Close closes them. New resolves
// addr once, as gomemcache resolves the client's servers when the client
// is made, and the store dials that address from then on, as the client
// does.
func WithServer(addr string) Option { return func(s *Store) { s.server = &addr } }

// New returns a store that keeps its locks through client. The caller owns
// client: the store never closes it or changes its settings. Its Timeout
// bounds every request (see the package documentation on contexts), and
// its MaxIdleConns should be at least the number of concurrent lock calls,
// or connections are dialled and closed all the time.
//
// New returns an error matching lock.ErrInvalid, naming the option, if
// client is nil, the name is empty, the prefix cannot be part of a
// memcached key, the fence guard is negative, or the server named with
// WithServer is empty; and an error naming WithServer if its address
// cannot be resolved.
func New(client *gomemcache.Client, opts ...Option) (*Store, error) {
	s := &Store{client: client, prefix: DefaultPrefix, name: "memcache", fenceGuard: DefaultFenceGuard}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	if client == nil {
		return nil, fmt.Errorf("%w: memcache.New: nil client", lock.ErrInvalid)
	}
	if s.name == "" {
		return nil, fmt.Errorf("%w: memcache.New: WithName(\"\"): the name may not be empty", lock.ErrInvalid)
	}
	if err := checkPrefix(s.prefix); err != nil {
		return nil, err
	}
	if s.fenceGuard < 0 {
		return nil, fmt.Errorf("%w: memcache.New: WithFenceGuard(%v): want >= 0", lock.ErrInvalid, s.fenceGuard)
	}
	if s.server != nil {
		if *s.server == "" {
			return nil, fmt.Errorf("%w: memcache.New: WithServer(\"\"): want the server's address", lock.ErrInvalid)
		}
		p, err := newPipe(*s.server, client, s.prefix+runKeySuffix)
		if err != nil {
			return nil, fmt.Errorf("memcache.New: WithServer(%q): %w", *s.server, err)
		}
		s.pipe = p
	}
	s.fenceKey = s.prefix + fenceKeySuffix
	return s, nil
}

// Close closes the idle connections the store opened to the server named
// with WithServer, as the client's Close closes its own: the store may
// still be used, and dials again. The client is the caller's: Close leaves
// it alone. Close is safe to call while other calls run.
func (s *Store) Close() error {
	if s.pipe == nil {
		return nil
	}
	return s.pipe.close()
}

// String returns the store's name.
func (s *Store) String() string { return s.name }

// TTLGranularity implements [lock.Granular]: it returns Granularity.
func (s *Store) TTLGranularity() time.Duration { return Granularity }

// Acquire implements [lock.Store] with memcached's add (with WithServer,
// on memcached 1.6.18 or later, a meta set in add mode): the key is
// stored with the token as its value only if it is absent (or expired).
// The TTL is rounded up to whole seconds.
func (s *Store) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := check(ctx, resource, token, ttl); err != nil {
		return err
	}
	exp, err := expiration(ttl, time.Now())
	if err != nil {
		return err
	}
	item := s.lockItem(resource, token, exp)
	if ctx.Done() == nil {
		return s.addLock(item, ttl)
	}
	c := detach(func(c *call) { c.err = s.addLock(item, ttl) })
	err = c.wait(ctx)
	if c.running() {
		s.pending.add(item.Key, token, c.done)
	}
	return err
}

// lockItem returns the item of resource's lock under token, expiring at
// exp. Its value is the token's own bytes, not a copy: gomemcache only
// writes an item's value to its connection, and the store never changes
// it.
func (s *Store) lockItem(resource, token string, exp int32) *gomemcache.Item {
	return &gomemcache.Item{Key: s.key(resource), Value: unsafe.Slice(unsafe.StringData(token), len(token)), Expiration: exp}
}

// tokenOf returns the token of a lock item made by lockItem: the token's
// own bytes, without a copy.
func tokenOf(item *gomemcache.Item) string {
	return unsafe.String(unsafe.SliceData(item.Value), len(item.Value))
}

// addLock takes the lock of item, whose TTL is ttl, with an add through
// the store's own connections if it has them, or else through the client.
func (s *Store) addLock(item *gomemcache.Item, ttl time.Duration) error {
	if s.pipe == nil {
		return s.add(item)
	}
	_, _, err := s.addPiped(item, ttl, "")
	return err
}

func (s *Store) add(item *gomemcache.Item) error {
	switch err := s.client.Add(item); {
	case err == nil:
		return nil
	case errors.Is(err, gomemcache.ErrNotStored):
		return lock.ErrNotAcquired
	default:
		return requestError("add", err)
	}
}

// Release implements [lock.Store]: gets reads the token and the item's CAS
// id, and if the token matches, a cas with a negative expiration replaces
// the item by one that is already expired — an atomic compare-and-delete.
// If the item changed in between, the store reads it again. A store made
// WithServer releases a lock it took itself with one delete by the item's
// CAS id instead, where the server allows (see the package documentation
// on own connections). A Release whose context ends still goes on in the
// background, so the lock is freed once memcached answers.
func (s *Store) Release(ctx context.Context, resource, token string) error {
	if err := check(ctx, resource, token, 1); err != nil {
		return err
	}
	key := s.key(resource)
	if ctx.Done() == nil {
		return s.swap(ctx, key, token, -1)
	}
	return detach(func(c *call) { c.err = s.swap(ctx, key, token, -1) }).wait(ctx)
}

// Extend implements [lock.Extender]: gets reads the token and the item's
// CAS id, and if the token matches, a cas rewrites the item with the new
// expiration. A missing item is never re-created. The TTL is rounded up
// to whole seconds. An Extend whose context ends before its cas is sent
// sends none: a lock whose holder stopped waiting is not kept longer.
func (s *Store) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := check(ctx, resource, token, ttl); err != nil {
		return err
	}
	exp, err := expiration(ttl, time.Now())
	if err != nil {
		return err
	}
	key := s.key(resource)
	if ctx.Done() == nil {
		return s.swap(ctx, key, token, exp)
	}
	return detach(func(c *call) { c.err = s.swap(ctx, key, token, exp) }).wait(ctx)
}

// swap sets the expiration of key to exp (negative: deletes it) if, and
// only if, its value is token, by gets and cas. An extension (exp >= 0)
// stops before its cas if ctx has ended.
func (s *Store) swap(ctx context.Context, key, token string, exp int32) error {
	s.pending.wait(key, token)
	return s.swapNow(ctx, key, token, exp)
}

// swapNow is swap without waiting for an abandoned add of key under token:
// for the add's own cleanup, which would otherwise wait for itself.
func (s *Store) swapNow(ctx context.Context, key, token string, exp int32) error {
	if exp < 0 {
		if done, err := s.releaseByCAS(key, token); done {
			return err
		}
	} else {
		s.cas.take(key, token) // the cas below gives the item another CAS id
	}
	for range casAttempts {
		item, err := s.get(key)
		switch {
		case errors.Is(err, gomemcache.ErrCacheMiss):
			return lock.ErrNotHeld
		case err != nil:
			return requestError("gets", err)
		case string(item.Value) != token:
			return lock.ErrNotHeld
		case item.CasID == 0:
			return errors.New("memcached returned no CAS id: it runs with CAS disabled (-C), which locks cannot work without")
		}
		if s.beforeCAS != nil {
			s.beforeCAS(key)
		}
		if exp >= 0 && ctx.Err() != nil {
			return ctx.Err() // the caller gave up on the extension: do not extend
		}
		item.Expiration = exp
		if exp < 0 {
			item.Value = nil // the item is dead on arrival; keep it small
		}
		switch err := s.client.CompareAndSwap(item); {
		case err == nil:
			return nil
		case errors.Is(err, gomemcache.ErrCacheMiss):
			return lock.ErrNotHeld // expired, evicted or released since the gets
		case errors.Is(err, gomemcache.ErrCASConflict):
			continue // changed since the gets: by a new owner, or an Extend of ours; look again
		default:
			return requestError("cas", err)
		}
	}
	return fmt.Errorf("memcached cas: the item changed %d times between gets and cas while holding the same token", casAttempts)
}

// Exists implements [lock.Store].
func (s *Store) Exists(ctx context.Context, resource string) (bool, error) {
	if err := check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	key := s.key(resource)
	if ctx.Done() == nil {
		return s.exists(key)
	}
	c := detach(func(c *call) { c.held, c.err = s.exists(key) })
	if err := c.wait(ctx); err != nil {
		return false, err
	}
	return c.held, nil
}

func (s *Store) exists(key string) (bool, error) {
	switch _, err := s.get(key); {
	case err == nil:
		return true, nil
	case errors.Is(err, gomemcache.ErrCacheMiss):
		return false, nil
	default:
		return false, requestError("gets", err)
	}
}

// requestError wraps the error of a memcached request.
func requestError(verb string, err error) error {
	return fmt.Errorf("memcached %s: %w", verb, err)
}

// check validates the arguments of a call and the context.
func check(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := storecall.Check(ctx, token, ttl); err != nil {
		return err
	}
	if resource == "" {
		return fmt.Errorf("%w: empty resource name", lock.ErrInvalid)
	}
	return nil
}
