package inproc_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

// On the fake clock, where time stands still between sleeps, a Clock's
// times are exactly time.Now's, through its anchor's renewals.
func TestClockTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c inproc.Clock
		for _, pause := range []time.Duration{0, 10 * time.Millisecond, 1500 * time.Millisecond, time.Hour} {
			time.Sleep(pause)
			now, i := time.Now(), inproc.Now()
			if got := c.Now(); !got.Equal(now) {
				t.Errorf("after %v: Clock.Now() = %v; want time.Now(), %v", pause, got, now)
			}
			if got, want := c.After(i, time.Minute), now.Add(time.Minute); !got.Equal(want) {
				t.Errorf("after %v: Clock.After(Now(), 1m) = %v; want %v", pause, got, want)
			}
		}
	})
}

// Instants measure the time that passes, and are never zero.
func TestInstants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := inproc.Now()
		time.Sleep(1234 * time.Millisecond)
		b := inproc.Now()
		if d := b.Sub(a); d != 1234*time.Millisecond {
			t.Errorf("Now() 1.234s apart: Sub = %v", d)
		}
		if a.IsZero() || b.IsZero() || a.Add(time.Second).Sub(a) != time.Second {
			t.Errorf("Now() = %d, then %d; want non-zero Instants, Add and Sub inverse", a, b)
		}
	})
	if inproc.Now().IsZero() {
		t.Error("Now() outside a bubble is the zero Instant")
	}
}

// A time from a Clock carries a monotonic reading: comparing it with
// time.Now does not depend on the wall clock.
func TestClockMonotonic(t *testing.T) {
	var c inproc.Clock
	got := c.After(inproc.Now(), time.Hour)
	if s := got.String(); !strings.Contains(s, " m=+") {
		t.Errorf("Clock.After(Now(), 1h) = %s; want a time with a monotonic reading (m=...)", s)
	}
}
