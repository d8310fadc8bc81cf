package redisstore

import (
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/storecall"
)

// Option configures a store. The adapters re-export the With functions
// below; each documents its option there too.
type Option func(*config) error

type config struct {
	prefix         string
	name           string
	replicas       int
	replicaTimeout time.Duration
	guard          time.Duration // WithRestartGuard's maxTTL; 0: no guard
}

// WithPrefix sets the prefix of the store's lock keys and channels.
func WithPrefix(prefix string) Option {
	return func(c *config) error {
		if err := CheckPrefix("WithPrefix", prefix); err != nil {
			return err
		}
		c.prefix = prefix
		return nil
	}
}

// WithName names the store in its String method.
func WithName(name string) Option {
	return func(c *config) error {
		if err := storecall.CheckName(name); err != nil {
			return err
		}
		c.name = name
		return nil
	}
}

// WithWaitReplicas makes every acquisition wait until n replicas have it.
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(c *config) error {
		switch {
		case n < 1:
			return fmt.Errorf("%w: WithWaitReplicas(%d, %v): want at least 1 replica", lock.ErrInvalid, n, timeout)
		case timeout < time.Millisecond:
			return fmt.Errorf("%w: WithWaitReplicas(%d, %v): want a timeout of at least 1ms (WAIT counts in milliseconds, and 0 would wait forever)", lock.ErrInvalid, n, timeout)
		}
		c.replicas, c.replicaTimeout = n, timeout
		return nil
	}
}

// WithFenceRetention is kept so that code written for earlier versions
// compiles: fences no longer keep a counter per resource, so there is
// nothing to retain. It checks its argument as before and does nothing.
func WithFenceRetention(d time.Duration) Option {
	return func(*config) error {
		if d < time.Millisecond {
			return fmt.Errorf("%w: WithFenceRetention(%v): want at least 1ms", lock.ErrInvalid, d)
		}
		return nil
	}
}

// WithRestartGuard makes the store grant nothing, on a server that may
// have lost its locks, until maxTTL has passed.
func WithRestartGuard(maxTTL time.Duration) Option {
	return func(c *config) error {
		if maxTTL < time.Millisecond {
			return fmt.Errorf("%w: WithRestartGuard(%v): want a maximum TTL of at least 1ms", lock.ErrInvalid, maxTTL)
		}
		c.guard = maxTTL
		return nil
	}
}

// configure applies opts to the defaults and checks them against the
// client.
func configure(cluster bool, opts []Option) (config, error) {
	c := config{prefix: DefaultPrefix}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	switch {
	case c.guard == 0:
	case c.replicas > 0:
		return c, fmt.Errorf("%w: WithRestartGuard and WithWaitReplicas cannot be combined: the guard is for independent masters, replicas for failover", lock.ErrInvalid)
	case cluster:
		return c, fmt.Errorf("%w: WithRestartGuard does not work on a Redis Cluster (its marker lives outside the locks' hash slots)", lock.ErrInvalid)
	}
	return c, nil
}
