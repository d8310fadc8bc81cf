package lock

import (
	"testing"
	"time"
)

// HeldCount returns how many locks l's held set records, released or
// not: what its memory is proportional to.
func HeldCount(l Locker) int {
	var h *heldSet
	switch l := l.(type) {
	case *SingleLocker:
		h = &l.held
	case *MultiLocker:
		h = &l.held
	}
	n := 0
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		n += len(s.locks)
		s.mu.Unlock()
	}
	return n
}

// HeldSetChurn records and forgets a lock on each of names in turn in a
// fresh held set, as a locker locking a fresh name each time does, and
// returns the set's allocations per name once warm.
func HeldSetChurn(names []string) float64 {
	var h heldSet
	farFuture := time.Now().Add(time.Hour)
	i := 0
	churn := func() {
		l := Lock{Resource: names[i%len(names)], Token: "t", ValidUntil: farFuture}
		i++
		h.put(l, 0)
		h.remove(l)
	}
	for range len(names) / 2 { // warm: the maps have grown, sweeps have run
		churn()
	}
	return testing.AllocsPerRun(len(names)/2, churn)
}

// StartingHolders returns how many holders are recorded as starting (see
// startHolding): between their Lock call and their keeper's record.
func StartingHolders() int {
	keepers.mu.Lock()
	defer keepers.mu.Unlock()
	return len(keepers.starting)
}

// KeepersRecorded returns how many keepers are recorded (see watch).
func KeepersRecorded() int {
	keepers.mu.Lock()
	defer keepers.mu.Unlock()
	n := 0
	for _, ks := range keepers.m {
		n += len(ks)
	}
	return n
}

// StartingReleases returns how many releases the holders starting have
// recorded (see starting).
func StartingReleases() int {
	keepers.mu.Lock()
	defer keepers.mu.Unlock()
	n := 0
	for s := range keepers.starting {
		n += len(s.released)
	}
	return n
}
