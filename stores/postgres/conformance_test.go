package postgres_test

import (
	"testing"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
)

func TestConformance(t *testing.T) {
	pool := shared(t)
	conformance.TestStore(t, func(t *testing.T) lock.Store { return newStore(t, pool) }, nil)
}
