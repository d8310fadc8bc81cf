package redis_test

import (
	"testing"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/redistest"
)

func TestConformance(t *testing.T) {
	client := redistest.Start(t).NewClient(t)
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, client) }, nil)
}

func TestConformanceCluster(t *testing.T) {
	client := redistest.SharedCluster(t).NewClient(t)
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, client) }, nil)
}
