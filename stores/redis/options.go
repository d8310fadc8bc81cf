package redis

import (
	"time"

	"github.com/lockkit/lock/internal/redisproto"
)

// Option configures a Store.
type Option func(*config) error

type config struct {
	prefix         string
	name           string
	replicas       int
	replicaTimeout time.Duration
	fenceRetention time.Duration
	guard          time.Duration // WithRestartGuard's maxTTL; 0: no guard
}

// DefaultPrefix is the key prefix of a Store made without WithPrefix.
const DefaultPrefix = redisproto.DefaultPrefix

// DefaultFenceRetention is how long a resource's fence counter is kept
// once created, unless WithFenceRetention says otherwise.
const DefaultFenceRetention = 24 * time.Hour

// WithPrefix sets the prefix of every key and channel the store uses
// (default DefaultPrefix), so that several applications, or tests, can
// share a server without sharing locks. The prefix may not contain "{" or
// "}": the store puts its own hash tag after it.
func WithPrefix(prefix string) Option {
	return func(c *config) error {
		if err := redisproto.CheckPrefix("WithPrefix", prefix); err != nil {
			return err
		}
		c.prefix = prefix
		return nil
	}
}

// WithName names the store in its String method, and so in the lockers'
// errors, which say which store failed. The default is "redis" followed by
// the address the client is connected to (for a cluster, one seed and the
// number of other nodes).
func WithName(name string) Option {
	return func(c *config) error {
		if err := redisproto.CheckName(name); err != nil {
			return err
		}
		c.name = name
		return nil
	}
}

// WithWaitReplicas makes every acquisition wait, with the WAIT command,
// until n replicas of the server that took the lock have received it, for
// at most timeout. If fewer confirm in time, the store releases the lock
// and the acquisition fails with an error matching ErrNotReplicated.
//
// This closes the failover hole of asynchronous replication, where a
// master grants a lock, dies before sending it to its replicas, and a
// promoted replica grants the same lock again — as far as n replicas
// go: a replica that confirmed may still not be the one promoted, and
// WAIT does not make Redis strongly consistent.
//
// The acquisition and the WAIT travel together on one connection, in one
// round trip that lasts until the replicas confirm. Keep timeout below the
// lockers' Options.StoreTimeout, or the locker gives up first.
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(c *config) error {
		if err := redisproto.CheckWaitReplicas(n, timeout); err != nil {
			return err
		}
		c.replicas, c.replicaTimeout = n, timeout
		return nil
	}
}

// WithFenceRetention sets how long a resource's fence counter is kept once
// created (default DefaultFenceRetention); the next fenced acquisition
// after it expired seeds a new one from the clock. See the package
// documentation on fencing for what it protects against and what it
// costs.
func WithFenceRetention(d time.Duration) Option {
	return func(c *config) error {
		if err := redisproto.CheckFenceRetention(d); err != nil {
			return err
		}
		c.fenceRetention = d
		return nil
	}
}
