package lock

import (
	"sync/atomic"
	"time"
)

// clock reads the time of the lockers' validity accounting with one
// monotonic clock reading: the wall clock is read once a second at most,
// into an anchor, and a time is the anchor plus the monotonic time elapsed
// since. (time.Now reads both clocks, at twice the cost.) A time from it
// carries a monotonic reading, which in-process comparisons such as
// Lock.Valid use; its wall reading, which only a Lock sent to another
// process uses, may differ from the wall clock by as much as the wall
// clock was adjusted in the last second.
type clock struct {
	anchor atomic.Pointer[time.Time]
}

// anchorAge bounds the age of the clock's wall-clock anchor.
const anchorAge = time.Second

func (c *clock) now() time.Time {
	if a := c.anchor.Load(); a != nil {
		// Outside [0, anchorAge): an old anchor, or one from another
		// clock (a testing/synctest bubble's).
		if d := time.Since(*a); d >= 0 && d < anchorAge {
			return a.Add(d)
		}
	}
	t := time.Now()
	c.anchor.Store(&t)
	return t
}
