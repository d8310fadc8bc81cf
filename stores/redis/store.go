package redis

import (
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
)

// Store is a lock store on a Redis server, a Sentinel-managed master or a
// Redis Cluster, through a rueidis client. Its methods, promoted from the
// Redis store shared with package goredis, are those of every capability
// listed in the package documentation, and the administrative ForceRelease
// and LastFence. It is safe for concurrent use. The zero value is not
// usable (its methods panic); call New.
type Store struct {
	*redisstore.Store
}

// New returns a Store that takes locks through client. The caller owns
// the client: the store never closes it, and it must stay open while the
// store is used. A nil client is refused, and so is a type of the
// caller's that embeds a nil client (a nil rueidis.Client, say) and does
// not declare its methods itself: every call would panic. These and invalid options give an error
// wrapping lock.ErrInvalid.
func New(c rueidis.Client, opts ...Option) (*Store, error) {
	// Mode and Do are the methods the store calls first; Mode and B do no
	// I/O, so that a wrapper that declares them is taken.
	probe := func() { _, _ = c.Mode(), c.B() }
	if why := redisstore.NilClient(c, reflect.TypeFor[rueidis.ClientOption]().PkgPath(), probe, "Mode", "Do"); why != "" {
		return nil, fmt.Errorf("%w: redis.New: %s", lock.ErrInvalid, why)
	}
	var owner any
	if reflect.ValueOf(c).Comparable() {
		owner = c // stores sharing a client share subscriptions
	}
	glue := client{c: c, cluster: c.Mode() == rueidis.ClientModeCluster, subs: new(atomic.Int32)}
	s, err := redisstore.New(glue, "redis", defaultName(c), owner, opts)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
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

// Option configures a Store.
type Option = redisstore.Option

// DefaultPrefix is the key prefix of a Store made without WithPrefix,
// the go-redis store's too, so that the two share locks by default.
const DefaultPrefix = redisstore.DefaultPrefix

// MaxResourceLen is the longest resource name, in bytes, that the store
// accepts; longer names are refused with an error wrapping
// lock.ErrInvalid, before anything is sent. 4 KiB is far beyond any real
// name yet keeps every command within a few packets.
const MaxResourceLen = redisstore.MaxResourceLen

// GuardKey is the key under which WithRestartGuard keeps its marker: one
// per server, outside every store's prefix.
const GuardKey = redisstore.GuardKey

// FenceKey is the key of a server's fence counter (on a cluster, one per
// hash slot: FenceKey followed by ":{tag}"), outside every store's prefix.
const FenceKey = redisstore.FenceKey

// ErrRecovering reports that a server under WithRestartGuard may have lost
// locks and grants none until a maximum TTL has passed. It wraps
// lock.ErrUnavailable.
var ErrRecovering = redisstore.ErrRecovering

// ErrNotReplicated reports that a lock was granted but fewer replicas than
// WithWaitReplicas asks for confirmed it in time, so the store released it
// again. It wraps lock.ErrUnavailable.
var ErrNotReplicated = redisstore.ErrNotReplicated

// WithPrefix sets the prefix of every lock key and channel the store uses
// (default DefaultPrefix), so that several applications, or tests, can
// share a server without sharing locks. The prefix may not contain "{" or
// "}": the store puts its own hash tag after it. The restart guard's
// marker and the fence counters are outside every prefix (so the prefix
// may not be FenceKey + ":", that of a cluster's counters).
func WithPrefix(prefix string) Option { return redisstore.WithPrefix(prefix) }

// WithName names the store in its String method, and so in the lockers'
// errors. The default is "redis" followed by the address the client is
// connected to (for a cluster, one node and the number of others).
func WithName(name string) Option { return redisstore.WithName(name) }

// WithWaitReplicas makes every acquisition wait, with WAIT, until n
// replicas have it, for at most timeout; otherwise the store releases it
// and fails with ErrNotReplicated. See Replication in the package
// documentation. Keep timeout below the lockers' Options.StoreTimeout.
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return redisstore.WithWaitReplicas(n, timeout)
}

// WithRestartGuard makes the store grant nothing on a server that may have
// lost its locks until maxTTL has passed, and refuse TTLs above maxTTL.
// See Restarts in the package documentation.
func WithRestartGuard(maxTTL time.Duration) Option { return redisstore.WithRestartGuard(maxTTL) }

// WithFenceRetention does nothing but refuse a d below 1ms, as before:
// fences no longer keep a counter per resource. It is kept so that code
// written for v0.1 compiles; remove it.
func WithFenceRetention(d time.Duration) Option { return redisstore.WithFenceRetention(d) }

// DefaultFenceRetention is WithFenceRetention's former default; fences
// keep no counter per resource any more.
const DefaultFenceRetention = 24 * time.Hour
