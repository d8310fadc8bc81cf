package redis_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

func TestConformance(t *testing.T) {
	client := redistest.Start(t).NewClient(t)
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, client) }, nil)
}

func TestConformanceCluster(t *testing.T) {
	client := redistest.SharedCluster(t).NewClient(t)
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, client) }, nil)
}

// TestConformanceSentinel runs the suite through a client that finds the
// master through a Sentinel, on stores that also wait for the replica to
// have each lock.
func TestConformanceSentinel(t *testing.T) {
	client := redistest.StartSentinel(t).NewClient(t)
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		return newStore(t, client, redis.WithWaitReplicas(1, time.Second))
	}, nil)
}
