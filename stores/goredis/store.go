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
// found by the Options method it promotes).
//
// Any other implementation of redis.UniversalClient — a type that embeds
// the redis.UniversalClient interface rather than a client, or forwards
// to one — has no Options method and is taken for a client of one server
// that does not bound commands by their context; fronting a Redis Cluster
// it does not work (releases fail with CROSSSLOT errors, the restart
// guard is not refused). Give such a type an Options method that returns
// its client's options (*redis.ClusterOptions for a cluster), and it is
// taken for that client.
//
// The caller owns the client: the store never closes it, and it must stay
// open while the store is used. A *redis.Ring, embedded or not, is
// refused: it moves keys to other shards when a shard is down, and a
// moved lock is a lock held twice (take one Store per master and
// lock.NewMulti instead). A nil client is refused, and so is a type that
// embeds a nil client (a nil *redis.Client, *redis.ClusterClient,
// *redis.Ring or redis.UniversalClient), whose every call would panic.
// These and invalid options give an error wrapping lock.ErrInvalid.
func New(c redis.UniversalClient, opts ...Option) (*Store, error) {
	// Process and Options are the methods the store calls first.
	if why := redisstore.NilClient(c, reflect.TypeFor[redis.Client]().PkgPath(), nil, "Process", "Options"); why != "" {
		return nil, fmt.Errorf("%w: goredis.New: %s", lock.ErrInvalid, why)
	}
	g, seeds, err := glue(c)
	if err != nil {
		return nil, err
	}
	var owner any
	if reflect.ValueOf(c).Comparable() {
		owner = c // stores sharing a client share subscriptions
	}
	s, err := redisstore.New(g, "goredis", defaultName(seeds), owner, opts)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
}

// glue returns the store's glue for c, and the addresses c connects to.
func glue(c redis.UniversalClient) (client, []string, error) {
	g := client{c: c, flights: new(flights), pipelines: new(sync.Pool)}
	var seeds []string
	// The kind of client is told by its Options method, so that a
	// caller's type wrapping one (embedding it) is taken for what it wraps.
	switch cl := c.(type) {
	case interface{ Options() *redis.Options }:
		o := cl.Options()
		g.ctxTimeouts, seeds = boundsByContext(o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout), []string{o.Addr}
	case interface{ Options() *redis.ClusterOptions }:
		o := cl.Options()
		g.ctxTimeouts, seeds, g.cluster = boundsByContext(o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout), o.Addrs, true
		g.readsReplicas = o.ReadOnly || o.RouteByLatency || o.RouteRandomly
		if g.readsReplicas {
			if _, ok := c.(masterFinder); !ok {
				return client{}, nil, fmt.Errorf("%w: goredis.New: a cluster client of type %T reads from replicas, and has no MasterForKey method to send the store's reads to masters", lock.ErrInvalid, c)
			}
		}
	case interface{ Options() *redis.RingOptions }:
		return client{}, nil, fmt.Errorf("%w: goredis.New: a *redis.Ring moves keys to other shards when one is down, which would grant held locks again; use a Store per master and lock.NewMulti", lock.ErrInvalid)
	}
	return g, seeds, nil
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
