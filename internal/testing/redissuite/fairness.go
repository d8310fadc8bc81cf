package redissuite

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// fairWorkers and fairLocks size the fairness workload: the bench's
// contention cell (workers each with a client of its own, re-locking at
// once), with fewer workers and for a number of locks rather than a time.
const (
	fairWorkers = 8
	fairLocks   = 80 // per worker
)

// maxPassedOver bounds how many acquisitions by workers that asked later
// one Lock may see while it waits. Served in turn, a waiter sees none;
// but the line's order is that in which callers got in line, a round trip
// after their refused attempt, not that of their Lock calls, and a caller
// the scheduler delays in between is passed by those that got in line
// meanwhile (3–18 seen with -race; 17–32 before a release reserved the
// lock for the waiter it woke, when a releaser that re-locked at once
// could take it first). A waiter that leaves the line — to sleep out
// a retry delay, or to take a lock that is being handed to another — is
// passed over by everyone who keeps coming back: 199–338 seen before the
// fix.
const maxPassedOver = 12 * fairWorkers

// Waiters keep their turn: 8 workers, each with a client of its own,
// lock one name again and again (Lock, a short section, Unlock, Lock at
// once), and no Lock is passed over by more than a few acquisitions of
// workers that asked after it. The bound counts acquisitions, not time.
func (f Factory) testFairness(t *testing.T) {
	srv := redistest.Start(t)
	rec := contention.NewRecorder()
	res, err := contention.Run(ctxFor(t, 2*time.Minute), contention.Config{
		Workers: fairWorkers,
		NewLocker: func(int) (lock.Locker, func(), error) {
			l, err := lock.NewSingle(f.Server(t, srv, redisstore.WithPrefix("fair:")), nil)
			return l, nil, err
		},
		TTL:            10 * time.Second,
		Hold:           10 * time.Microsecond,
		LocksPerWorker: fairLocks,
		Recorder:       rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report("fairness", "redis")
	if rep.Violations != 0 || rep.LostUpdates != 0 || rep.Acquisitions != fairWorkers*fairLocks {
		t.Fatalf("%d violations, %d lost updates, %d acquisitions; want 0, 0, %d", rep.Violations, rep.LostUpdates, rep.Acquisitions, fairWorkers*fairLocks)
	}
	if n := contention.PassedOver(rec.Ops()); n > maxPassedOver {
		t.Errorf("a Lock saw %d acquisitions by workers that asked after it while it waited; want at most %d: waiters lose their turn", n, maxPassedOver)
	} else {
		t.Logf("most passed over: %d (bound %d)", n, maxPassedOver)
	}
}
