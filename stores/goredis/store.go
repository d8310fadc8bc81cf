package goredis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisproto"
)

// Store is a lock store on a Redis server, a Sentinel-managed master or a
// Redis Cluster, through a go-redis client. It is safe for concurrent use.
type Store struct {
	client redis.UniversalClient
	config

	cluster         bool        // the client is a *redis.ClusterClient
	ctxTimeouts     bool        // the client bounds commands by their context's deadline: see run
	readsReplicas   bool        // the cluster client sends reads to replicas: see read
	noShardedPubSub atomic.Bool // the server lacks SSUBSCRIBE: WaitRelease cannot work
	subOwner        any         // whose subscriptions this store shares: see hub
}

var (
	_ lock.Store             = (*Store)(nil)
	_ lock.Extender          = (*Store)(nil)
	_ lock.TTLReader         = (*Store)(nil)
	_ lock.Fencer            = (*Store)(nil)
	_ lock.Waiter            = (*Store)(nil)
	_ lock.ResourceValidator = (*Store)(nil)
)

// MaxResourceLen is the longest resource name, in bytes, that the store
// accepts — the rueidis store's limit too; longer names are refused with
// an error wrapping lock.ErrInvalid, before anything is sent.
const MaxResourceLen = redisproto.MaxResourceLen

// New returns a Store that takes locks through client: a *redis.Client
// (standalone, or a failover client from redis.NewFailoverClient), or a
// *redis.ClusterClient, as redis.NewUniversalClient makes them. The
// caller owns the client: the store never closes it, and it must stay
// open while the store is used. A *redis.Ring is refused: it moves keys
// to other shards when a shard is down, and a moved lock is a lock held
// twice (take one Store per master and lock.NewMulti instead). Invalid
// options give an error wrapping lock.ErrInvalid.
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: goredis.New: nil client", lock.ErrInvalid)
	}
	c := config{prefix: DefaultPrefix, fenceRetention: DefaultFenceRetention}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	s := &Store{client: client, config: c}
	var seeds []string
	switch cl := client.(type) {
	case *redis.Client:
		o := cl.Options()
		s.ctxTimeouts, seeds = o.ContextTimeoutEnabled, []string{o.Addr}
	case *redis.ClusterClient:
		o := cl.Options()
		s.ctxTimeouts, seeds, s.cluster = o.ContextTimeoutEnabled, o.Addrs, true
		s.readsReplicas = o.ReadOnly || o.RouteByLatency || o.RouteRandomly
	case *redis.Ring:
		return nil, fmt.Errorf("%w: goredis.New: a *redis.Ring moves keys to other shards when one is down, which would grant held locks again; use a Store per master and lock.NewMulti", lock.ErrInvalid)
	}
	if err := s.checkGuard(); err != nil {
		return nil, err
	}
	if s.name == "" {
		s.name = defaultName(seeds)
	}
	s.subOwner = any(s)
	if reflect.ValueOf(client).Comparable() {
		s.subOwner = client // stores sharing a client share subscriptions
	}
	return s, nil
}

// defaultName names a store after the address its client connects to.
func defaultName(seeds []string) string {
	switch len(seeds) {
	case 0:
		return "goredis"
	case 1:
		return "goredis " + seeds[0]
	}
	return fmt.Sprintf("goredis %s (+%d seeds)", seeds[0], len(seeds)-1)
}

// String returns the store's name: see WithName.
func (s *Store) String() string { return s.name }

// Acquire implements [lock.Store] with SET NX PX: one round trip. The
// lock carries no fence; the lockers use AcquireFenced.
func (s *Store) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	if s.guard > 0 {
		_, err := s.acquireGuarded(ctx, false, resource, token, ttl)
		return err
	}
	key := redisproto.LockKey(s.prefix, resource)
	if s.replicas > 0 {
		_, err := s.acquireReplicated(ctx, false, key, "", token, ttl)
		return err
	}
	tok := &sentArg{v: token}
	err := s.do(ctx, "set", key, tok, "nx", "px", redisproto.Millis(ttl)).Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.Nil):
		return s.refused(ctx, key, tok)
	}
	return s.failed(ctx, err)
}

// refused returns the error of a SET NX that found key taken, reading the
// key with GET: lock.ErrNotAcquired if it holds a lock (or has expired
// since); nil if it holds the token and the SET was sent more than once
// (an earlier send took it: see do.go); and an error if it holds another
// type of value — a key no lock store wrote, which is not contention and
// would never be freed by a release. It costs one more round trip, on
// the refusal path only.
func (s *Store) refused(ctx context.Context, key string, tok *sentArg) error {
	v, err := s.read(ctx, key, "get", key).Text()
	switch {
	case errors.Is(err, redis.Nil): // it expired since the SET
		return lock.ErrNotAcquired
	case isWrongType(err):
		return fmt.Errorf("goredis: WRONGTYPE: lock key %q holds a value that is not a lock", key)
	case err != nil:
		return s.failed(ctx, err)
	case v == tok.v && tok.resent():
		return nil
	}
	return lock.ErrNotAcquired
}

// Release implements [lock.Store]: a compare-and-delete script, one round
// trip, that also wakes the first waiter in line (see WaitRelease).
func (s *Store) Release(ctx context.Context, resource, token string) error {
	if err := s.check(ctx, resource, token, 1); err != nil {
		return err
	}
	lockKey, waitersKey := redisproto.LockAndWaiters(s.prefix, resource)
	return s.release(ctx, lockKey, waitersKey, token)
}

// release runs the release script on a lock key and its waiters' key.
func (s *Store) release(ctx context.Context, lockKey, waitersKey, token string) error {
	tok := &sentArg{v: token}
	n, err := s.eval(ctx, &redisproto.Release, []string{lockKey, waitersKey}, tok).Int64()
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case n == 0 && tok.resent():
		return fmt.Errorf("release of %q: %w; the lock is not held under the token now", lockKey, errUnknownOutcome)
	case n == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// Exists implements [lock.Store] with EXISTS.
func (s *Store) Exists(ctx context.Context, resource string) (bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	key := redisproto.LockKey(s.prefix, resource)
	n, err := s.read(ctx, key, "exists", key).Int64()
	if err != nil {
		return false, s.failed(ctx, err)
	}
	return n == 1, nil
}

// ValidateResource implements [lock.ResourceValidator]: every non-empty
// name of at most MaxResourceLen bytes is accepted, whatever its bytes
// (braces, NUL, invalid UTF-8 included).
func (s *Store) ValidateResource(resource string) error {
	return redisproto.ValidateResource("goredis", resource)
}

// check validates the arguments of a call and the context: see
// redisproto.CheckCall.
func (s *Store) check(ctx context.Context, resource, token string, ttl time.Duration) error {
	return redisproto.CheckCall(ctx, "goredis", resource, token, ttl)
}

// failed returns the error of a call that did not get a clear answer,
// never a lock outcome: see redisproto.Failed.
func (s *Store) failed(ctx context.Context, err error) error { return redisproto.Failed(ctx, err) }
