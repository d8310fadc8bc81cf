package goredis_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/redisfaults"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/goredis"
)

func TestConformance(t *testing.T) {
	client := clientOf(t, redistest.Start(t))
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, client) }, nil)
}

func TestConformanceCluster(t *testing.T) {
	client := clusterClientOf(t, redistest.SharedCluster(t))
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, client) }, nil)
}

// TestConformanceWaitReplicas runs the suite on a master with a replica,
// found through a Sentinel by a failover client, on stores that wait for
// the replica to have each lock.
func TestConformanceWaitReplicas(t *testing.T) {
	client := sentinelClientOf(t, redistest.StartSentinel(t))
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		return newStore(t, client, goredis.WithWaitReplicas(1, time.Second))
	}, nil)
}

// TestFaults runs the Redis fault scenarios, shared with the rueidis
// store, on this store.
func TestFaults(t *testing.T) {
	redisfaults.Run(t, redisfaults.Factory{
		Server:  func(t *testing.T, srv *redistest.Server) lock.Store { return newStore(t, clientOf(t, srv)) },
		Cluster: func(t *testing.T, c *redistest.Cluster) lock.Store { return newStore(t, clusterClientOf(t, c)) },
	})
}
