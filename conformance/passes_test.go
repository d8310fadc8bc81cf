package conformance_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// Correct stores pass, however slow (within the tolerance), however
// coarse their expiry (as they declare it), with or without optional
// capabilities.

// A store whose every call takes 40ms passes with a tolerance of 100ms,
// the default of a store that talks to a server.
func TestSlowStorePasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		m := memory.New()
		m.Inject(memory.Fault{Delay: 40 * time.Millisecond, Times: memory.Always})
		return m
	}, &conformance.Options{Synctest: true, Tolerance: 100 * time.Millisecond})
}

// A store whose locks expire up to a second early, on whole seconds, and
// that says so through lock.Granular, passes.
func TestCoarseStorePasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return brokenstore.Coarse(time.Second) }, &conformance.Options{Synctest: true})
}

// The same store, told its granularity through Options.Granularity and
// hiding lock.Granular, passes too.
func TestCoarseStoreGranularityOptionPasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return brokenstore.Coarse(time.Second).Store }, &conformance.Options{Synctest: true, Granularity: time.Second})
}

// A store whose permits expire up to a second early, on whole seconds,
// and that says so through lock.Granular, passes.
func TestCoarsePermitStorePasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return brokenstore.CoarsePermits(time.Second) }, &conformance.Options{Synctest: true})
}

// A store a round trip away that reports a call its deadline cut short
// in flight with the transport's error (an i/o timeout wrapping
// os.ErrDeadlineExceeded, not context.DeadlineExceeded), as lock.Store
// allows, passes.
func TestTransportTimeoutsPasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return brokenstore.TransportTimeouts(2 * time.Millisecond) }, &conformance.Options{Synctest: true})
}
