package etcd_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// TestConformance runs the suite on a three-member cluster, in real time,
// with one-second TTLs (the clusters' shortest lease). Locks expire late,
// never early: up to the half second in which the leader notices an
// expired lease, which the tolerance covers.
func TestConformance(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, client) },
		&conformance.Options{TTL: etcdtest.MinTTL, Tolerance: time.Second})
}

// TestConformanceWithSlack runs the suite again with a second of slack on
// every lease, as locks of 10s to 19s have: such a lock expires up to a
// second later still, which the tolerance covers, and never earlier.
func TestConformanceWithSlack(t *testing.T) {
	defer etcd.SetSlack(1)()
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, client) },
		&conformance.Options{TTL: etcdtest.MinTTL, Tolerance: 2 * time.Second})
}
