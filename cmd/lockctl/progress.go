package main

import (
	"fmt"
	"io"
	"time"
)

// progress redraws one status line on a terminal every 200ms until
// stopped. Where stderr is not a terminal it prints nothing: no escape
// sequences in logs.
type progress struct {
	stop chan struct{}
	done chan struct{}
	w    io.Writer
}

// startProgress starts redrawing line() on w if tty; stop erases the line.
func startProgress(w io.Writer, tty bool, line func() string) *progress {
	p := &progress{stop: make(chan struct{}), done: make(chan struct{}), w: w}
	if !tty {
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprint(w, "\r\033[K"+line())
			}
		}
	}()
	return p
}

// Stop stops the redrawing and erases the line.
func (p *progress) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// rate renders n events in d as a rate per second.
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f/s", float64(n)/d.Seconds())
}

// ms renders a duration in milliseconds, as the JSON outputs do.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fmtDur renders a latency for the summaries: to three or four
// significant digits, and below a microsecond in nanoseconds (the memory
// store's latencies), never as 0s.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}
