package contention

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Claim is the period during which a holder was entitled, by what the
// library told it, to assume it held a resource alone: from the moment its
// acquisition returned to the earlier of the moment it called Unlock and
// the end of the validity last reported to it.
type Claim struct {
	Client     int
	Resource   string
	Token      string
	Fence      uint64
	Start, End time.Duration
	Shared     bool // a reader's claim, which other readers may share
}

// forever stands for "no release recorded".
const forever = time.Duration(math.MaxInt64)

// Claims derives the claims from recorded operations: one per OK
// acquisition. An OK extension moves the claim's end to the validity it
// reported (the earlier validity still counts until the extension
// returned); the first Unlock call (whatever its outcome) ends it. Release
// and extension are matched to the latest OK acquisition of their token
// that returned before they began, so tokens must not be reused
// concurrently (the default random tokens never are).
func Claims(ops []Op) []Claim {
	type report struct{ end, valid time.Duration } // when a validity was reported, and its end
	type acq struct {
		op      Op
		reports []report
		release time.Duration
	}
	var acqs []*acq
	byToken := make(map[string][]*acq)
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Outcome == OK {
			a := &acq{op: op, reports: []report{{op.End, op.ValidUntil}}, release: forever}
			acqs = append(acqs, a)
			byToken[op.Token] = append(byToken[op.Token], a)
		}
	}
	owner := func(op Op) *acq {
		var best *acq
		for _, a := range byToken[op.Token] {
			if a.op.End <= op.Start && (best == nil || a.op.End > best.op.End) {
				best = a
			}
		}
		return best
	}
	for _, op := range ops {
		switch {
		case op.Kind == KindRelease:
			if a := owner(op); a != nil {
				a.release = min(a.release, op.Start)
			}
		case op.Kind == KindExtend && op.Outcome == OK:
			if a := owner(op); a != nil {
				a.reports = append(a.reports, report{op.End, op.ValidUntil})
			}
		}
	}
	claims := make([]Claim, 0, len(acqs))
	for _, a := range acqs {
		// Reports made after the release call do not count.
		rs := slices.DeleteFunc(a.reports, func(r report) bool { return r.end > a.release })
		slices.SortFunc(rs, func(x, y report) int { return cmp.Compare(x.end, y.end) })
		end := time.Duration(math.MinInt64)
		for i, r := range rs {
			until := r.valid
			if i+1 < len(rs) {
				until = min(until, rs[i+1].end) // superseded by the next report
			}
			end = max(end, until)
		}
		if len(rs) == 0 { // released before the acquisition returned: nothing claimed
			end = a.op.End
		}
		claims = append(claims, Claim{
			Client: a.op.Client, Resource: a.op.Resource, Token: a.op.Token, Fence: a.op.Fence,
			Start: a.op.End, End: min(end, a.release), Shared: a.op.Shared,
		})
	}
	return claims
}

// Violation is a pair of claims on one resource that intersect when they
// must not: B began while A was held. For a claim that exceeded a limit
// above 1, A is the held claim whose end brought the holders back within
// the limit.
type Violation struct {
	A, B    Claim
	Overlap time.Duration // how long the claims were held against the rule
}

// Overlap is what the overlap checker found.
type Overlap struct {
	// Violations counts the claims held against the rule for a positive
	// time. For mutual exclusion (limit 1), it counts pairs of claims on
	// one resource, by different locks, that intersect; claims that merely
	// touch do not count. With a larger limit, it counts the claims that
	// began while limit others were held; and every pair of a shared
	// claim and an exclusive one that intersect.
	Violations int
	// MaxHolders is the largest number of claims on one resource at one
	// instant: at most the limit when the rule held (readers apart), 0
	// with no claim.
	MaxHolders int
	// MaxOverlap is the longest time a violation lasted.
	MaxOverlap time.Duration
	// Examples holds the first few violations, for messages.
	Examples []Violation
}

// maxExamples bounds Overlap.Examples.
const maxExamples = 5

// CheckOverlap finds the intersecting claims: mutual exclusion, with
// readers sharing (see [CheckHolders]).
func CheckOverlap(claims []Claim) Overlap { return CheckHolders(claims, 1) }

// CheckHolders checks that no more than limit exclusive claims (a
// semaphore's permits, or a lock's with limit 1) hold one resource at
// once, and that shared claims (readers) hold it only while no exclusive
// claim (a writer) does. A limit below 1 is taken as 1.
func CheckHolders(claims []Claim, limit int) Overlap {
	limit = max(limit, 1)
	var o Overlap
	add := func(v Violation) {
		if v.Overlap <= 0 {
			return
		}
		o.Violations++
		o.MaxOverlap = max(o.MaxOverlap, v.Overlap)
		if len(o.Examples) < maxExamples {
			o.Examples = append(o.Examples, v)
		}
	}
	byResource := make(map[string][]Claim)
	for _, c := range claims {
		if c.End > c.Start {
			byResource[c.Resource] = append(byResource[c.Resource], c)
		}
	}
	for _, cs := range byResource {
		slices.SortFunc(cs, func(a, b Claim) int { return cmp.Compare(a.Start, b.Start) })
		var active []Claim
		for _, c := range cs {
			active = slices.DeleteFunc(active, func(a Claim) bool { return a.End <= c.Start })
			var exclusive []Claim
			for _, a := range active {
				switch {
				case a.Shared != c.Shared:
					add(Violation{A: a, B: c, Overlap: min(a.End, c.End) - c.Start})
				case !a.Shared:
					exclusive = append(exclusive, a)
				}
			}
			switch {
			case c.Shared || len(exclusive) < limit:
			case limit == 1:
				for _, a := range exclusive {
					add(Violation{A: a, B: c, Overlap: min(a.End, c.End) - c.Start})
				}
			default:
				// Beyond the limit until the limit-th latest end among
				// those held.
				slices.SortFunc(exclusive, func(x, y Claim) int { return cmp.Compare(y.End, x.End) })
				a := exclusive[limit-1]
				add(Violation{A: a, B: c, Overlap: min(a.End, c.End) - c.Start})
			}
			active = append(active, c)
			o.MaxHolders = max(o.MaxHolders, len(active))
		}
	}
	return o
}
