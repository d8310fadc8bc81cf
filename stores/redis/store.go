package redis

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisproto"
)

// Store is a lock store on a Redis server, a Sentinel-managed master or a
// Redis Cluster, through a rueidis client. It is safe for concurrent use.
type Store struct {
	client rueidis.Client
	config

	retentionArg    string                 // fenceRetention in ms, for the acquire script
	guardArg        string                 // the guard's maxTTL in ms, for the guarded script
	lastTTL         atomic.Pointer[ttlArg] // see ttlArg
	subOwner        any                    // whose subscriptions this store shares: see hub
	noShardedPubSub atomic.Bool            // the server lacks SSUBSCRIBE: WaitRelease cannot work
	pipe            pipeline               // calls started with Start
	handoffs        handoffs               // resources this store just released to a waiter
}

var (
	_ lock.Store             = (*Store)(nil)
	_ lock.Extender          = (*Store)(nil)
	_ lock.TTLReader         = (*Store)(nil)
	_ lock.Fencer            = (*Store)(nil)
	_ lock.Waiter            = (*Store)(nil)
	_ lock.ResourceValidator = (*Store)(nil)
	_ lock.Starter           = (*Store)(nil)
)

// New returns a Store that takes locks through client. The caller owns
// the client: the store never closes it, and it must stay open while the
// store is used. Invalid options give an error wrapping lock.ErrInvalid.
func New(client rueidis.Client, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: redis.New: nil client", lock.ErrInvalid)
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
	if err := c.checkGuard(client); err != nil {
		return nil, err
	}
	s := &Store{client: client, config: c, retentionArg: itoa(millis(c.fenceRetention)), guardArg: itoa(millis(c.guard))}
	if s.name == "" {
		s.name = defaultName(client)
	}
	s.subOwner = any(s)
	if reflect.ValueOf(client).Comparable() {
		s.subOwner = client // stores sharing a client share subscriptions
	}
	return s, nil
}

// defaultName names a store after the node its client talks to.
func defaultName(client rueidis.Client) string {
	addrs := make([]string, 0, 8)
	for addr := range client.Nodes() {
		addrs = append(addrs, addr)
	}
	slices.Sort(addrs)
	switch len(addrs) {
	case 0:
		return "redis"
	case 1:
		return "redis " + addrs[0]
	}
	return fmt.Sprintf("redis %s (+%d nodes)", addrs[0], len(addrs)-1)
}

// String returns the store's name: see WithName.
func (s *Store) String() string { return s.name }

// Acquire implements [lock.Store] with SET NX PX: one round trip. The lock
// carries no fence; the lockers use AcquireFenced.
func (s *Store) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	if s.guard > 0 {
		_, err := s.acquireGuarded(ctx, false, resource, token, ttl)
		return err
	}
	key := s.lockKey(resource)
	if err := s.handoffs.yield(ctx, key); err != nil {
		return err
	}
	if s.replicas > 0 {
		_, err := s.acquireReplicated(ctx, false, key, "", token, ttl)
		return err
	}
	err := s.do(ctx, func() rueidis.Completed {
		return s.setNX(s.client.B(), key, token, ttl)
	}).Error()
	switch {
	case err == nil:
		return nil
	case rueidis.IsRedisNil(err):
		return s.refused(ctx, key)
	}
	return s.failed(ctx, err)
}

// refused returns the error of a SET NX that found key taken:
// lock.ErrNotAcquired if key holds a lock (a string), and an error if it
// holds another type of value — a key that no lock store wrote, which is
// not contention and would otherwise never be freed by a release. It
// costs one more round trip, on the refusal path only.
func (s *Store) refused(ctx context.Context, key string) error {
	typ, err := s.client.Do(ctx, s.client.B().Type().Key(key).Build()).ToString()
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case typ == "string" || typ == "none": // "none": it expired since the SET
		return lock.ErrNotAcquired
	}
	return fmt.Errorf("redis: WRONGTYPE: lock key %q holds a %s, not a lock", key, typ)
}

// setNX builds SET key token NX PX ttl, with the TTL argument cached (see
// ttlArg).
func (s *Store) setNX(b rueidis.Builder, key, token string, ttl time.Duration) rueidis.Completed {
	return b.Arbitrary("SET").Keys(key).Args(token, "NX", "PX", s.ttlArg(ttl)).Build()
}

// Release implements [lock.Store]: a compare-and-delete script, one round
// trip, that also tells waiters the resource is free.
func (s *Store) Release(ctx context.Context, resource, token string) error {
	if err := s.check(ctx, resource, token, 1); err != nil {
		return err
	}
	lockKey, waitersKey := s.lockAndWaiters(resource)
	start := time.Now()
	n, err := s.releaseKeys(ctx, lockKey, waitersKey, token)
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case n == 0:
		return lock.ErrNotHeld
	case n == 2:
		s.handoffs.record(lockKey, start)
	}
	return nil
}

// releaseKeys runs the release script on a lock key and its waiters' key:
// 0 if not held, 1 if released, 2 if released to a waiter.
func (s *Store) releaseKeys(ctx context.Context, lockKey, waitersKey, token string) (int64, error) {
	return s.eval(ctx, &releaseScript, lockKey, waitersKey, token, "", "").AsInt64()
}

// Exists implements [lock.Store] with EXISTS.
func (s *Store) Exists(ctx context.Context, resource string) (bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	n, err := s.read(ctx, "EXISTS", s.lockKey(resource))
	if err != nil {
		return false, s.failed(ctx, err)
	}
	return n == 1, nil
}

// check validates the arguments of a call and the context: see
// redisproto.CheckCall.
func (s *Store) check(ctx context.Context, resource, token string, ttl time.Duration) error {
	return redisproto.CheckCall(ctx, "redis", resource, token, ttl)
}

// failed returns the error of a call that did not get a clear answer,
// never a lock outcome: see redisproto.Failed.
func (s *Store) failed(ctx context.Context, err error) error { return redisproto.Failed(ctx, err) }

// millis converts a TTL to whole milliseconds, rounding up: see
// redisproto.Millis.
func millis(d time.Duration) int64 { return redisproto.Millis(d) }
