package memcache

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// The records of locks that were never released are swept once their
// TTL has passed, so a store that takes locks and lets them expire does
// not grow without bound; a record whose lock may still be held stays.
func TestCASBookSweepsExpiredRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b casBook
		for i := range minSweep - 1 {
			b.record(fmt.Sprint("k", i), "t", 1, serverRun{}, time.Second)
		}
		b.record("live", "t", 2, serverRun{}, time.Hour)
		time.Sleep(time.Second + 2*Granularity)
		b.record("new", "t", 3, serverRun{}, time.Second)
		if n := len(b.held); n != 2 {
			t.Errorf("%d records after %d expired and 2 live ones; want 2", n, minSweep-1)
		}
		if r, ok := b.take("live", "t"); !ok || r.cas != 2 {
			t.Errorf("take(live, t) = %+v, %v; want the live lock's record", r, ok)
		}
		if _, ok := b.take("live", "t"); ok {
			t.Error("take(live, t) again found a record; want it forgotten")
		}
	})
}
