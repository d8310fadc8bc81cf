// Package inproc is what the lockers share with a lock store that lives
// in the process (stores/memory): the process's monotonic clock as
// Instants, a Clock that turns them into times, and the capability by
// which such a store spares a lock.SingleLocker its own bookkeeping
// (Store): it reports the Instant at which it decided a call, so that the
// locker reads no clock around it, and it records which locker took each
// lock, so that the locker keeps no set of held locks of its own.
package inproc

import (
	"sync/atomic"
	"time"
)

// Instant is a reading of the process's monotonic clock (in a
// testing/synctest bubble, of the bubble's clock): the time elapsed since
// an epoch before the first reading, so that the zero Instant is no
// reading. Reading it costs one clock reading and no arithmetic on
// time.Time values: durations between Instants are plain subtractions.
type Instant int64

// epoch is the origin of Instants: a nanosecond before the package was
// initialised, so that Now never returns the zero Instant.
var epoch = time.Now().Add(-time.Nanosecond)

// Now returns the current Instant.
func Now() Instant { return Instant(time.Since(epoch)) }

// Since returns the time elapsed since i.
func Since(i Instant) time.Duration { return Now().Sub(i) }

// Add returns i+d.
func (i Instant) Add(d time.Duration) Instant { return i + Instant(d) }

// Sub returns i-j.
func (i Instant) Sub(j Instant) time.Duration { return time.Duration(i - j) }

// IsZero reports whether i is the zero Instant: no reading.
func (i Instant) IsZero() bool { return i == 0 }

// Clock turns Instants into times with one addition: the wall clock is
// read once a second at most, into an anchor, and the time of an Instant
// is the anchor's time plus the Instant's distance from the anchor. (time.Now reads
// both clocks, at twice the cost.) A time from it carries a monotonic
// reading, which in-process comparisons such as lock.Lock.Valid use; its
// wall reading, which only a Lock sent to another process uses, may
// differ from the wall clock by as much as the wall clock was adjusted in
// the last second. The zero Clock is ready to use.
type Clock struct {
	anchor atomic.Pointer[anchor]
}

type anchor struct {
	t  time.Time
	at Instant // t's Instant
}

// anchorAge bounds the distance from the clock's wall-clock anchor of
// the readings it serves.
const anchorAge = time.Second

// Now returns the current time.
func (c *Clock) Now() time.Time { return c.After(Now(), 0) }

// After returns the time d after i. If i is not a recent reading, the
// clock reads the wall clock again.
func (c *Clock) After(i Instant, d time.Duration) time.Time {
	if a := c.anchor.Load(); a != nil {
		// Farther: an old anchor, or one from another clock (a
		// testing/synctest bubble's).
		if e := i.Sub(a.at); e > -anchorAge && e < anchorAge {
			return a.t.Add(e + d)
		}
	}
	t := time.Now()
	a := &anchor{t: t, at: Instant(t.Sub(epoch))}
	c.anchor.Store(a)
	return t.Add(i.Sub(a.at) + d)
}
