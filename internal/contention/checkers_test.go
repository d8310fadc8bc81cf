package contention_test

import (
	"math"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/contention"
)

const ms = time.Millisecond

func acquired(client int, token string, start, end, valid time.Duration) contention.Op {
	return contention.Op{Client: client, Kind: contention.KindAcquire, Resource: "r", Token: token,
		Start: start, End: end, Outcome: contention.OK, ValidUntil: valid}
}

func released(client int, token string, start time.Duration) contention.Op {
	return contention.Op{Client: client, Kind: contention.KindRelease, Resource: "r", Token: token,
		Start: start, End: start + ms, Outcome: contention.OK}
}

func extended(client int, token string, start, end, valid time.Duration) contention.Op {
	return contention.Op{Client: client, Kind: contention.KindExtend, Resource: "r", Token: token,
		Start: start, End: end, Outcome: contention.OK, ValidUntil: valid}
}

func TestClaims(t *testing.T) {
	ops := []contention.Op{
		// Released before its validity: the release ends the claim.
		acquired(0, "a", 0, 1*ms, 100*ms), released(0, "a", 10*ms),
		// Never released: the validity ends it.
		acquired(1, "b", 20*ms, 22*ms, 50*ms),
		// Extended: the claim runs to the extension's validity...
		acquired(2, "c", 60*ms, 61*ms, 100*ms), extended(2, "c", 90*ms, 95*ms, 180*ms),
		// ...and an extension to a shorter validity still leaves the
		// earlier one standing until it returned.
		acquired(3, "d", 200*ms, 201*ms, 300*ms), extended(3, "d", 210*ms, 220*ms, 215*ms),
		// An extension after the release does not count.
		acquired(4, "e", 400*ms, 401*ms, 450*ms), released(4, "e", 420*ms), extended(4, "e", 430*ms, 431*ms, 900*ms),
		// Failed acquisitions make no claim, whatever they say.
		{Client: 5, Kind: contention.KindAcquire, Resource: "r", Start: 0, End: 5 * ms, Outcome: contention.Unknown},
	}
	want := map[string][2]time.Duration{
		"a": {1 * ms, 10 * ms},
		"b": {22 * ms, 50 * ms},
		"c": {61 * ms, 180 * ms},
		"d": {201 * ms, 220 * ms},
		"e": {401 * ms, 420 * ms},
	}
	claims := contention.Claims(ops)
	if len(claims) != len(want) {
		t.Fatalf("got %d claims, want %d: %+v", len(claims), len(want), claims)
	}
	for _, c := range claims {
		if w := want[c.Token]; c.Start != w[0] || c.End != w[1] {
			t.Errorf("claim %s = [%v, %v], want [%v, %v]", c.Token, c.Start, c.End, w[0], w[1])
		}
	}
}

// A token reused by later locks (tokengen.Fixed) matches each release to
// the latest acquisition before it.
func TestClaimsReusedToken(t *testing.T) {
	claims := contention.Claims([]contention.Op{
		acquired(0, "t", 0, 1*ms, 100*ms), released(0, "t", 10*ms),
		acquired(0, "t", 20*ms, 21*ms, 120*ms), released(0, "t", 30*ms),
	})
	if len(claims) != 2 || claims[0].End != 10*ms || claims[1].End != 30*ms {
		t.Errorf("claims = %+v, want ends 10ms and 30ms", claims)
	}
}

func TestCheckOverlap(t *testing.T) {
	claim := func(res, token string, start, end time.Duration) contention.Claim {
		return contention.Claim{Resource: res, Token: token, Start: start, End: end}
	}
	t.Run("exclusive", func(t *testing.T) {
		o := contention.CheckOverlap([]contention.Claim{
			claim("r", "a", 0, 10*ms),
			claim("r", "b", 10*ms, 20*ms), // touching is not overlapping
			claim("s", "c", 5*ms, 15*ms),  // another resource
			claim("r", "d", 30*ms, 30*ms), // empty
		})
		if o.Violations != 0 || o.MaxHolders != 1 || o.MaxOverlap != 0 {
			t.Errorf("got %+v, want no violation and one holder at most", o)
		}
	})
	t.Run("violations", func(t *testing.T) {
		o := contention.CheckOverlap([]contention.Claim{
			claim("r", "a", 0, 100*ms),
			claim("r", "b", 10*ms, 20*ms),
			claim("r", "c", 15*ms, 50*ms),
			claim("r", "d", 120*ms, 130*ms),
		})
		// a∩b = 10ms, a∩c = 35ms, b∩c = 5ms; a, b and c at 15–20ms.
		if o.Violations != 3 || o.MaxHolders != 3 || o.MaxOverlap != 35*ms || len(o.Examples) != 3 {
			t.Errorf("got %+v, want 3 violations, 3 holders, max overlap 35ms", o)
		}
	})
	t.Run("none", func(t *testing.T) {
		if o := contention.CheckOverlap(nil); o.MaxHolders != 0 || o.Violations != 0 {
			t.Errorf("got %+v for no claims", o)
		}
	})
}

func TestCheckFences(t *testing.T) {
	ops := []contention.Op{
		acquired(0, "old", 0, 1*ms, 50*ms),
		acquired(1, "new", 2*ms, 3*ms, 60*ms),   // acquired strictly after "old" returned
		acquired(2, "conc", 0, 5*ms, 60*ms),     // overlapping call with "old": not strictly newer
		acquired(3, "newer", 9*ms, 9*ms, 60*ms), // strictly newer than both
	}
	w := func(token string, fence uint64) contention.FencedWrite {
		return contention.FencedWrite{Token: token, Fence: fence}
	}
	t.Run("in order", func(t *testing.T) {
		var f contention.FencedResource
		f.Write(0, "old", 1, 0)
		f.Write(1, "new", 2, 0)
		f.Write(1, "new", 2, 0)
		if f.Write(0, "old", 1, 0) {
			t.Error("a write with a lower fence than the highest was accepted")
		}
		st := contention.CheckFences(ops, f.Writes())
		if st != (contention.FenceStats{Accepted: 3, Rejected: 1}) {
			t.Errorf("got %+v", st)
		}
	})
	t.Run("stale accepted", func(t *testing.T) {
		// As a resource with broken fences would log them.
		writes := []contention.FencedWrite{w("new", 5), w("old", 5), w("conc", 5), w("newer", 5), w("new", 5)}
		for i := range writes {
			writes[i].Accepted = true
		}
		// "old" after "new": stale. "conc" after "new": "new" began at
		// 2ms, before "conc" returned: not strictly newer, not stale.
		// "new" after "newer": stale.
		st := contention.CheckFences(ops, writes)
		if st != (contention.FenceStats{Accepted: 5, StaleAccepted: 2}) {
			t.Errorf("got %+v, want 5 accepted of which 2 stale", st)
		}
	})
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*ms)
	}
	for q, want := range map[float64]time.Duration{0.5: 50 * ms, 0.99: 99 * ms, 1: 100 * ms, 0.001: 1 * ms} {
		if got := contention.Percentile(ds, q); got != want {
			t.Errorf("Percentile(1..100ms, %v) = %v, want %v", q, got, want)
		}
	}
	if got := contention.Percentile(nil, 0.5); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
	ops := []contention.Op{acquired(0, "a", 0, 3*ms, 0), acquired(0, "b", 10*ms, 11*ms, 0),
		{Kind: contention.KindAcquire, Start: 0, End: time.Hour, Outcome: contention.Unknown}}
	if got := contention.AcquireLatencies(ops); len(got) != 2 || got[0] != ms || got[1] != 3*ms {
		t.Errorf("AcquireLatencies = %v, want [1ms 3ms] (OK acquisitions only)", got)
	}
}

func TestSuccessRateAndRecovery(t *testing.T) {
	fail := func(start time.Duration) contention.Op {
		return contention.Op{Kind: contention.KindAcquire, Start: start, End: start + ms, Outcome: contention.Unknown}
	}
	ops := []contention.Op{
		acquired(0, "a", 0, 1*ms, 0), fail(10 * ms), fail(20 * ms), acquired(0, "b", 25*ms, 26*ms, 0),
		acquired(0, "c", 40*ms, 45*ms, 0), acquired(0, "d", 50*ms, 52*ms, 0),
	}
	if rate, n := contention.SuccessRate(ops, 10*ms, 30*ms); n != 3 || math.Abs(rate-1.0/3) > 1e-9 {
		t.Errorf("SuccessRate(10ms, 30ms) = %v over %d calls, want 1/3 over 3", rate, n)
	}
	if _, n := contention.SuccessRate(ops, time.Hour, 2*time.Hour); n != 0 {
		t.Errorf("SuccessRate over an empty window counted %d calls", n)
	}
	if d, ok := contention.Recovery(ops, 30*ms); !ok || d != 15*ms {
		t.Errorf("Recovery(30ms) = %v, %v; want 15ms (the acquisition returning at 45ms)", d, ok)
	}
	if _, ok := contention.Recovery(ops, time.Hour); ok {
		t.Error("Recovery found an acquisition after the last one")
	}
}

func TestValidity(t *testing.T) {
	ttls := []time.Duration{30 * ms, 90 * ms, 60 * ms}
	for q, want := range map[int]time.Duration{1: 90 * ms, 2: 60 * ms, 3: 30 * ms, 4: 0} {
		if got := contention.QuorumTTL(ttls, q); got != want {
			t.Errorf("QuorumTTL(%v, %d) = %v, want %v", ttls, q, got, want)
		}
	}
	check := func(valid, expiry time.Duration, o contention.Outcome) contention.Op {
		return contention.Op{Kind: contention.KindServerTTL, ValidUntil: valid, ServerExpiry: expiry, Outcome: o}
	}
	st := contention.CheckValidity([]contention.Op{
		check(90*ms, 100*ms, contention.OK), check(100*ms, 100*ms, contention.OK), check(101*ms, 100*ms, contention.OK),
		check(500*ms, 0, contention.Unknown), // the read failed: not judged
	})
	if st != (contention.ValidityStats{Checked: 3, Violations: 1}) {
		t.Errorf("CheckValidity = %+v, want 3 checked, 1 violation", st)
	}
}

func TestCounter(t *testing.T) {
	var c contention.Counter
	a, b := c.Read(), c.Read() // two holders read the same value...
	c.Write(a + 1)
	c.Write(b + 1) // ...and one update is lost
	c.Write(c.Read() + 1)
	if c.Value() != 2 || c.Writes() != 3 || c.Lost() != 1 {
		t.Errorf("value %d, writes %d, lost %d; want 2, 3, 1", c.Value(), c.Writes(), c.Lost())
	}
}
