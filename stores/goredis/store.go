package goredis

import (
	"fmt"
	"reflect"
	"sync"
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

// New returns a Store that takes locks through c: a *redis.Client
// (standalone, or a failover client from redis.NewFailoverClient), or a
// *redis.ClusterClient, as redis.NewUniversalClient makes them, or a type
// of the caller's that embeds one (it is taken for the client it embeds,
// found by its Options method; any other implementation is taken for a
// client of one server, which does not bound commands by their context).
// The caller owns the client: the store never closes it, and it must stay
// open while the store is used. A *redis.Ring, embedded or not, is
// refused: it moves keys to other shards when a shard is down, and a
// moved lock is a lock held twice (take one Store per master and
// lock.NewMulti instead). Invalid options give an error wrapping
// lock.ErrInvalid.
func New(c redis.UniversalClient, opts ...Option) (*Store, error) {
	if v := reflect.ValueOf(c); c == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("%w: goredis.New: nil client", lock.ErrInvalid)
	}
	glue := client{c: c, abandoned: new(abandoned), pipelines: new(sync.Pool)}
	var seeds []string
	// The kind of client is told by its Options method, so that a
	// caller's type wrapping one (embedding it) is taken for what it wraps.
	switch cl := c.(type) {
	case interface{ Options() *redis.Options }:
		o := cl.Options()
		glue.ctxTimeouts, seeds = boundsByContext(o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout), []string{o.Addr}
	case interface{ Options() *redis.ClusterOptions }:
		o := cl.Options()
		glue.ctxTimeouts, seeds, glue.cluster = boundsByContext(o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout), o.Addrs, true
		glue.readsReplicas = o.ReadOnly || o.RouteByLatency || o.RouteRandomly
		if glue.readsReplicas {
			if _, ok := c.(masterFinder); !ok {
				return nil, fmt.Errorf("%w: goredis.New: a cluster client of type %T reads from replicas, and has no MasterForKey method to send the store's reads to masters", lock.ErrInvalid, c)
			}
		}
	case interface{ Options() *redis.RingOptions }:
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

// boundsByContext reports whether a client with these options bounds a
// command by its context's deadline: only with ContextTimeoutEnabled, and
// only if it sets socket deadlines at all — a ReadTimeout or WriteTimeout
// of -2 (-1 once go-redis has read a *redis.Client's options) makes it set
// none, and then it ignores the context's deadline too.
func boundsByContext(enabled bool, read, write time.Duration) bool {
	return enabled && read >= 0 && write >= 0
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

// The options, constants and errors below are the rueidis store's
// (package redis), shared, with the same meaning: see their documentation
// there. The two stores share the guard's marker and the fence counters.

// Option configures a Store.
type Option = redisstore.Option

// The options.
var (
	WithPrefix = redisstore.WithPrefix
	// WithName's default: "goredis" and the client's address — for a
	// cluster client its first seed and the number of others, for a
	// failover client go-redis' placeholder address, "FailoverClient".
	WithName           = redisstore.WithName
	WithWaitReplicas   = redisstore.WithWaitReplicas
	WithRestartGuard   = redisstore.WithRestartGuard
	WithFenceRetention = redisstore.WithFenceRetention // does nothing now
)

// The constants.
const (
	DefaultPrefix         = redisstore.DefaultPrefix
	MaxResourceLen        = redisstore.MaxResourceLen
	GuardKey              = redisstore.GuardKey
	FenceKey              = redisstore.FenceKey
	DefaultFenceRetention = 24 * time.Hour // unused now: fences keep no counter per resource
)

// The errors, both wrapping lock.ErrUnavailable.
var (
	ErrRecovering    = redisstore.ErrRecovering
	ErrNotReplicated = redisstore.ErrNotReplicated
)
