package contention

import (
	"cmp"
	"slices"
	"time"
)

// PassedOver returns the fairness of a run's acquisitions: the most
// acquisitions of the same resource that clients which asked later (their
// acquisition call began after this one's) made while one acquisition
// call waited, over every successful call. A line served in order passes
// nobody over; a waiter that loses its place again and again is passed
// over by every client that keeps coming back. It counts events, so it
// does not depend on how fast the machine is.
func PassedOver(ops []Op) int {
	var acqs []Op
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Outcome == OK {
			acqs = append(acqs, op)
		}
	}
	slices.SortFunc(acqs, func(a, b Op) int { return cmp.Compare(a.End, b.End) })
	most := 0
	for j, a := range acqs {
		// The acquisitions made while a waited: granted after a began.
		first, _ := slices.BinarySearchFunc(acqs[:j], a.Start, func(x Op, t time.Duration) int { return cmp.Compare(x.End, t) })
		passed := 0
		for _, b := range acqs[first:j] {
			if b.Start > a.Start && b.Client != a.Client && b.Resource == a.Resource {
				passed++
			}
		}
		most = max(most, passed)
	}
	return most
}
