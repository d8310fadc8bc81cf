package memory_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/stores/memory"
)

func TestConformance(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return memory.New() }, &conformance.Options{Synctest: true})
}

// TestConformanceRealTime runs the suite on the real clock too, so the
// store is also checked outside a synctest bubble.
func TestConformanceRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time conformance run skipped in -short mode")
	}
	conformance.TestStore(t, func(t *testing.T) lock.Store { return memory.New() }, &conformance.Options{TTL: 50 * time.Millisecond, Tolerance: 50 * time.Millisecond})
}
