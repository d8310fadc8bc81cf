package faultkit

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// pollEvery is the interval of the polling checks.
const pollEvery = 10 * time.Millisecond

// GoroutineSet is the set of goroutines alive at one moment, for a leak
// check without any dependency: take one with [Goroutines] before a run,
// and call Leaked after it.
type GoroutineSet struct {
	ids map[uint64]bool
}

// Goroutines returns the goroutines alive now.
func Goroutines() GoroutineSet {
	s := GoroutineSet{ids: make(map[uint64]bool)}
	for _, g := range stacks() {
		s.ids[g.id] = true
	}
	return s
}

// Leaked waits up to wait for the goroutines started since s was taken to
// end, and returns the stacks of those still alive. Goroutines of tests
// (their stack holds testing.tRunner: subtests, parallel tests) are not
// counted, nor those whose stack contains one of the ignore strings (for
// instance a fixture's process reaper). Goroutines of other code running
// in the process at the same time would be counted: do not run leak-checked
// scenarios in parallel with other tests.
func (s GoroutineSet) Leaked(wait time.Duration, ignore ...string) []string {
	deadline := time.Now().Add(wait)
	for {
		var leaked []string
		for _, g := range stacks() {
			if !s.ids[g.id] && !ignored(g.stack, ignore) {
				leaked = append(leaked, g.stack)
			}
		}
		if len(leaked) == 0 || !time.Now().Before(deadline) {
			return leaked
		}
		time.Sleep(pollEvery)
	}
}

func ignored(stack string, ignore []string) bool {
	if strings.Contains(stack, "testing.tRunner(") {
		return true
	}
	for _, s := range ignore {
		if strings.Contains(stack, s) {
			return true
		}
	}
	return false
}

type goroutine struct {
	id    uint64
	stack string
}

// stacks returns every goroutine's id and stack.
func stacks() []goroutine {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		head, _, _ := bytes.Cut(block, []byte(" ["))
		idText, ok := bytes.CutPrefix(head, []byte("goroutine "))
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(string(idText), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, goroutine{id: id, stack: string(block)})
	}
	return out
}

// Residue polls count — a function the scenario provides that counts the
// keys with the test's prefix left on the servers — until it reports 0 or
// wait has passed (give it the TTL plus some slack), and returns the last
// count. It returns the error of the last call if that call failed.
func Residue(ctx context.Context, wait time.Duration, count func(context.Context) (int, error)) (int, error) {
	deadline := time.Now().Add(wait)
	for {
		n, err := count(ctx)
		if (err == nil && n == 0) || !time.Now().Before(deadline) || ctx.Err() != nil {
			return n, err
		}
		t := time.NewTimer(pollEvery)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return n, err
		}
	}
}
