package goredis

import (
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
)

// Store is a lock store on a Redis server, a Sentinel-managed master or a
// Redis Cluster, through a go-redis client. Its methods, promoted from the
// Redis store shared with package redis (rueidis), are those of every
// capability listed in the package documentation, and the administrative
// ForceRelease and LastFence. It is safe for concurrent use.
type Store struct {
	*redisstore.Store
}

var (
	_ lock.Store             = (*Store)(nil)
	_ lock.Extender          = (*Store)(nil)
	_ lock.TTLReader         = (*Store)(nil)
	_ lock.FenceRaiser       = (*Store)(nil)
	_ lock.Waiter            = (*Store)(nil)
	_ lock.ResourceValidator = (*Store)(nil)
	_ lock.Starter           = (*Store)(nil)
)

// New returns a Store that takes locks through c: a *redis.Client
// (standalone, or a failover client from redis.NewFailoverClient), or a
// *redis.ClusterClient, as redis.NewUniversalClient makes them. The
// caller owns the client: the store never closes it, and it must stay
// open while the store is used. A *redis.Ring is refused: it moves keys
// to other shards when a shard is down, and a moved lock is a lock held
// twice (take one Store per master and lock.NewMulti instead). Invalid
// options give an error wrapping lock.ErrInvalid.
func New(c redis.UniversalClient, opts ...Option) (*Store, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: goredis.New: nil client", lock.ErrInvalid)
	}
	glue := client{c: c, abandoned: new(abandoned)}
	var seeds []string
	switch cl := c.(type) {
	case *redis.Client:
		o := cl.Options()
		glue.ctxTimeouts, seeds = o.ContextTimeoutEnabled, []string{o.Addr}
	case *redis.ClusterClient:
		o := cl.Options()
		glue.ctxTimeouts, seeds, glue.cluster = o.ContextTimeoutEnabled, o.Addrs, true
		glue.readsReplicas = o.ReadOnly || o.RouteByLatency || o.RouteRandomly
	case *redis.Ring:
		return nil, fmt.Errorf("%w: goredis.New: a *redis.Ring moves keys to other shards when one is down, which would grant held locks again; use a Store per master and lock.NewMulti", lock.ErrInvalid)
	}
	var owner any
	if reflect.ValueOf(c).Comparable() {
		owner = c // stores sharing a client share subscriptions
	}
	s, err := redisstore.New(glue, "goredis", defaultName(seeds), owner, opts)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
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

// Option configures a Store: the options of the rueidis store (package
// redis), with the same meaning.
type Option = redisstore.Option

// DefaultPrefix is the key prefix of a Store made without WithPrefix —
// the rueidis store's too, so that the two share locks by default.
const DefaultPrefix = redisstore.DefaultPrefix

// MaxResourceLen is the longest resource name, in bytes, that the store
// accepts — the rueidis store's limit too.
const MaxResourceLen = redisstore.MaxResourceLen

// GuardKey is the key of WithRestartGuard's marker, shared with the
// rueidis store.
const GuardKey = redisstore.GuardKey

// FenceKey is the key of a server's fence counter, shared with the
// rueidis store (on a cluster, one per hash slot).
const FenceKey = redisstore.FenceKey

// ErrRecovering is the rueidis store's: a server under WithRestartGuard
// grants nothing yet. It wraps lock.ErrUnavailable.
var ErrRecovering = redisstore.ErrRecovering

// ErrNotReplicated is the rueidis store's: fewer replicas than
// WithWaitReplicas asks for confirmed a lock. It wraps
// lock.ErrUnavailable.
var ErrNotReplicated = redisstore.ErrNotReplicated

// WithPrefix sets the prefix of every lock key and channel the store uses
// (default DefaultPrefix). See the rueidis store's WithPrefix.
func WithPrefix(prefix string) Option { return redisstore.WithPrefix(prefix) }

// WithName names the store in its String method, and so in the lockers'
// errors. The default is "goredis" followed by the address the client
// connects to (for a cluster, its first seed and the number of others).
func WithName(name string) Option { return redisstore.WithName(name) }

// WithWaitReplicas makes every acquisition wait until n replicas have it;
// see the rueidis store's WithWaitReplicas. The acquisition and the WAIT
// travel in one pipeline on one connection (on a cluster, to the master
// of the lock's slot).
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return redisstore.WithWaitReplicas(n, timeout)
}

// WithRestartGuard makes the store grant nothing on a server that may have
// lost its locks until maxTTL has passed, and refuse TTLs above maxTTL;
// see the rueidis store's WithRestartGuard.
func WithRestartGuard(maxTTL time.Duration) Option { return redisstore.WithRestartGuard(maxTTL) }

// WithFenceRetention does nothing: fences no longer keep a counter per
// resource.
//
// Deprecated: remove it.
func WithFenceRetention(d time.Duration) Option { return redisstore.WithFenceRetention(d) }

// DefaultFenceRetention is WithFenceRetention's former default.
//
// Deprecated: fences keep no counter per resource.
const DefaultFenceRetention = 24 * time.Hour
