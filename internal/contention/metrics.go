package contention

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// AcquireLatencies returns the durations of the OK acquisitions, sorted.
func AcquireLatencies(ops []Op) []time.Duration {
	var ds []time.Duration
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Outcome == OK {
			ds = append(ds, op.End-op.Start)
		}
	}
	slices.Sort(ds)
	return ds
}

// Percentile returns the q-quantile (0 < q ≤ 1) of sorted durations by the
// nearest-rank method, or 0 if there are none.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// SuccessRate returns the fraction of acquisition calls that began in
// [from, to) and succeeded, and the number of such calls. With retrying
// Lock calls, a call that began during a fault and succeeded after it
// counts as a success: scenarios measuring a fault bound their calls (a
// lock timeout or a bounded retry) well below the fault's length.
func SuccessRate(ops []Op, from, to time.Duration) (rate float64, calls int) {
	ok := 0
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Start >= from && op.Start < to {
			calls++
			if op.Outcome == OK {
				ok++
			}
		}
	}
	if calls == 0 {
		return 0, 0
	}
	return float64(ok) / float64(calls), calls
}

// Recovery returns the time from after to the return of the first OK
// acquisition that returned at or after it, and false if there is none.
func Recovery(ops []Op, after time.Duration) (time.Duration, bool) {
	best, found := time.Duration(0), false
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Outcome == OK && op.End >= after && (!found || op.End-after < best) {
			best, found = op.End-after, true
		}
	}
	return best, found
}

// QuorumTTL returns the quorum-th largest of the remaining TTLs read from
// the servers holding a lock: the time after which fewer than quorum
// servers can still hold it. With fewer than quorum TTLs it returns 0: a
// quorum no longer holds the lock.
func QuorumTTL(ttls []time.Duration, quorum int) time.Duration {
	if quorum < 1 || len(ttls) < quorum {
		return 0
	}
	s := slices.SortedFunc(slices.Values(ttls), func(a, b time.Duration) int { return cmp.Compare(b, a) })
	return s[quorum-1]
}

// ValidityStats counts the validity-vs-server checks.
type ValidityStats struct {
	// Checked counts the server reads that answered.
	Checked int
	// Violations counts locks whose reported validity outlived the latest
	// possible expiry of the key on a quorum of servers (Op.ServerExpiry):
	// the holder was told it held the lock when a quorum may already have
	// let it go.
	Violations int
}

// CheckValidity judges the KindServerTTL operations.
func CheckValidity(ops []Op) ValidityStats {
	var st ValidityStats
	for _, op := range ops {
		if op.Kind != KindServerTTL || op.Outcome != OK {
			continue
		}
		st.Checked++
		if op.ValidUntil > op.ServerExpiry {
			st.Violations++
		}
	}
	return st
}
