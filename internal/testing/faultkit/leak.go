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
// and call Leaked (or Grown) after it.
type GoroutineSet struct {
	ids   map[uint64]bool
	kinds map[string]int // goroutines by signature, for Grown
}

// Goroutines returns the goroutines alive now.
func Goroutines() GoroutineSet {
	s := GoroutineSet{ids: make(map[uint64]bool), kinds: make(map[string]int)}
	for _, g := range stacks() {
		s.ids[g.id] = true
		s.kinds[signature(g.stack)]++
	}
	return s
}

// Grown is Leaked for runs that replace goroutines of long-lived fixtures:
// a shared server restarted during the run makes its admin client replace
// its connection goroutines, which Leaked would report as new ones. Grown
// compares counts instead of identities: it returns the stacks of the
// goroutines in excess of the set's count for their signature (the
// function they run and the function that started them). It can miss a
// leak that exactly replaces a goroutine of the same signature that ended,
// so prefer Leaked where fixtures are not restarted.
func (s GoroutineSet) Grown(wait time.Duration, ignore ...string) []string {
	deadline := time.Now().Add(wait)
	for {
		seen := make(map[string]int)
		var grown []string
		for _, g := range stacks() {
			if ignored(g.stack, ignore) {
				continue
			}
			sig := signature(g.stack)
			if seen[sig]++; seen[sig] > s.kinds[sig] {
				grown = append(grown, g.stack)
			}
		}
		if len(grown) == 0 || !time.Now().Before(deadline) {
			return grown
		}
		time.Sleep(pollEvery)
	}
}

// signature identifies what a goroutine is: the function at the top of its
// stack that is not in the runtime, and the function that started it.
func signature(stack string) string {
	lines := strings.Split(stack, "\n")
	top, creator := "", ""
	for i := 1; i < len(lines); i++ { // lines[0] is the goroutine's header
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "created by "):
			creator, _, _ = strings.Cut(strings.TrimPrefix(l, "created by "), " in goroutine")
		case strings.HasPrefix(l, "\t"):
		case top == "" && !strings.HasPrefix(l, "runtime.") && !strings.HasPrefix(l, "internal/") && !strings.HasPrefix(l, "sync."):
			top, _, _ = strings.Cut(l, "(")
		}
	}
	return top + " <- " + creator
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
// wait has passed, and returns the last count. Keep wait well under the
// TTL of the keys: a key left behind that expires meanwhile is not
// counted. It returns the error of the last call if that call failed.
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
