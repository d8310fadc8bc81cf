package main

import (
	"testing"
	"time"
)

// Latencies keep three or four significant digits; below a microsecond
// (the memory store's) they read in nanoseconds, not as 0s.
func TestFmtDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                          "0s",
		223 * time.Nanosecond:      "223ns",
		1500 * time.Nanosecond:     "2µs",
		843 * time.Microsecond:     "843µs",
		12345 * time.Microsecond:   "12.35ms",
		1234567 * time.Microsecond: "1.235s",
	} {
		if got := fmtDur(d); got != want {
			t.Errorf("fmtDur(%d) = %q; want %q", int64(d), got, want)
		}
	}
}
