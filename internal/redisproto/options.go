package redisproto

import (
	"fmt"
	"time"

	"github.com/lockkit/lock"
)

// The checks of the stores' options, shared so that both stores refuse
// the same values with the same words. Each returns an error wrapping
// lock.ErrInvalid that names the option and the value, or nil.

// CheckName checks WithName's argument.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: WithName(\"\"): the name may not be empty", lock.ErrInvalid)
	}
	return nil
}

// CheckWaitReplicas checks WithWaitReplicas's arguments.
func CheckWaitReplicas(n int, timeout time.Duration) error {
	switch {
	case n < 1:
		return fmt.Errorf("%w: WithWaitReplicas(%d, %v): want at least 1 replica", lock.ErrInvalid, n, timeout)
	case timeout < time.Millisecond:
		return fmt.Errorf("%w: WithWaitReplicas(%d, %v): want a timeout of at least 1ms (WAIT counts in milliseconds, and 0 would wait forever)", lock.ErrInvalid, n, timeout)
	}
	return nil
}

// CheckFenceRetention checks WithFenceRetention's argument.
func CheckFenceRetention(d time.Duration) error {
	if d < time.Millisecond {
		return fmt.Errorf("%w: WithFenceRetention(%v): want at least 1ms", lock.ErrInvalid, d)
	}
	return nil
}

// CheckRestartGuard checks WithRestartGuard's argument.
func CheckRestartGuard(maxTTL time.Duration) error {
	if maxTTL < time.Millisecond {
		return fmt.Errorf("%w: WithRestartGuard(%v): want a maximum TTL of at least 1ms", lock.ErrInvalid, maxTTL)
	}
	return nil
}

// CheckGuardUse checks the restart guard (guard, its maximum TTL; 0 when
// off) against the other options and the client: it is for independent
// masters, so it combines neither with replicas (WithWaitReplicas) nor
// with a cluster client.
func CheckGuardUse(guard time.Duration, replicas int, cluster bool) error {
	switch {
	case guard == 0:
		return nil
	case replicas > 0:
		return fmt.Errorf("%w: WithRestartGuard and WithWaitReplicas cannot be combined: the guard is for independent masters, replicas for failover", lock.ErrInvalid)
	case cluster:
		return fmt.Errorf("%w: WithRestartGuard does not work on a Redis Cluster (its marker lives outside the locks' hash slots)", lock.ErrInvalid)
	}
	return nil
}
