package postgres_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultsuite"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// Lock delay on PostgreSQL (issue #19), as internal/testing/faultsuite
// runs it on the other stores: a holder pauses past its validity without
// releasing while a rival, with a pool of its own, tries for the lock.
// With Options.LockDelay the row outlives the pause and the holder wakes
// to find nobody else has been inside; the control, without the delay,
// lets the rival in once the row expires.
func TestLockDelayPausedHolder(t *testing.T) {
	const (
		ttl   = 300 * time.Millisecond
		pause = ttl + 700*time.Millisecond // the holder wakes this long after taking the lock
		delay = 5 * time.Second            // well past the pause, however slow the machine
	)
	for _, control := range []bool{false, true} {
		name, d := "lock-delay-paused-holder", delay
		if control {
			name, d = "no-lock-delay-paused-holder", 0
		}
		t.Run(name, func(t *testing.T) {
			f := beginFault(t, name, pgtest.Shared(t))
			var lockers []lock.Locker
			for range 2 {
				s, err := postgres.New(f.pool(f.url), f.table, postgres.WithSweepInterval(0))
				if err != nil {
					t.Fatal(err)
				}
				l, err := lock.NewSingle(s, &lock.Options{LockDelay: d})
				if err != nil {
					t.Fatal(err)
				}
				lockers = append(lockers, l)
			}
			rep := faultsuite.PausedHolder{Holder: lockers[0], Rival: lockers[1], TTL: ttl, Pause: pause, Delayed: !control}.Run(f.ctx, t)
			rep.Scenario, rep.Backend = name, "postgres"
			rep = f.finish(rep, ttl)
			switch bad := rep.Unsafe(); {
			case control && rep.Violations == 0:
				t.Errorf("%s: the rival never got in while the holder was paused without a lock delay: the check is blind: %s", name, rep.Line())
			case !control && bad != "":
				t.Errorf("%s: %s", name, bad)
			}
		})
	}
}
