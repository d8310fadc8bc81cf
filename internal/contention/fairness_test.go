package contention_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock/internal/contention"
)

// PassedOver counts, for each acquisition, the acquisitions granted while
// it waited to clients that asked after it, and returns the most.
func TestPassedOver(t *testing.T) {
	ms := time.Millisecond
	acq := func(client int, start, end time.Duration) contention.Op {
		return contention.Op{Client: client, Kind: contention.KindAcquire, Outcome: contention.OK, Start: start * ms, End: end * ms}
	}
	ops := []contention.Op{
		acq(0, 0, 100), // waited from 0 to 100: 1 and 2 asked later and got it first; 3 asked as early
		acq(3, 0, 5),
		acq(1, 10, 20),
		acq(2, 30, 40),
		acq(1, 50, 150), // granted after 0: passed over by nobody
		{Client: 2, Kind: contention.KindAcquire, Outcome: contention.Refused, Start: 60 * ms, End: 70 * ms},
		{Client: 2, Kind: contention.KindRelease, Outcome: contention.OK, Start: 80 * ms, End: 90 * ms},
	}
	if got := contention.PassedOver(ops); got != 2 {
		t.Errorf("PassedOver = %d; want 2", got)
	}
	if got := contention.PassedOver(ops[1:4]); got != 0 {
		t.Errorf("PassedOver of acquisitions served in order = %d; want 0", got)
	}
}

// Only acquisitions of the resource a call waits for pass it over: two
// resources each served in the order of the calls pass nobody over.
func TestPassedOverPerResource(t *testing.T) {
	ms := time.Millisecond
	acq := func(client int, resource string, start, end time.Duration) contention.Op {
		return contention.Op{Client: client, Kind: contention.KindAcquire, Outcome: contention.OK, Resource: resource, Start: start * ms, End: end * ms}
	}
	ops := []contention.Op{
		acq(0, "a", 0, 100), // waits for a, held by someone else until 100
		acq(1, "b", 10, 20), // later callers take b meanwhile: not a's waiter's turn
		acq(2, "b", 30, 40),
		acq(3, "a", 50, 150), // asked for a after client 0, served after it
	}
	if got := contention.PassedOver(ops); got != 0 {
		t.Errorf("PassedOver of two resources each served in order = %d; want 0 (acquisitions of b do not pass over a waiter for a)", got)
	}
}
