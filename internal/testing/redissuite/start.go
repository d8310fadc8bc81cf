package redissuite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// startAll starts calls from as many goroutines at once, so that they are
// sent in batches, and returns their outcomes in order.
func startAll(t *testing.T, s Store, ctx context.Context, calls []lock.Call) []error {
	t.Helper()
	ctxs := make([]context.Context, len(calls))
	for i := range ctxs {
		ctxs[i] = ctx
	}
	return startEach(t, s, ctxs, calls)
}

// Calls started together after SCRIPT FLUSH are sent again in full: no
// NOSCRIPT reaches a caller, and each gets its own outcome.
func (f Factory) testStartBatchAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	const n = 40
	var acquire, release, extend []lock.Call
	for i := range n {
		r, tok := fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i)
		acquire = append(acquire, lock.Call{Op: lock.CallAcquire, Resource: r, Token: tok, TTL: time.Minute})
		if i%2 == 1 {
			tok = "wrong" // every other call does not hold its lock
		}
		extend = append(extend, lock.Call{Op: lock.CallExtend, Resource: r, Token: tok, TTL: time.Minute})
		release = append(release, lock.Call{Op: lock.CallRelease, Resource: r, Token: tok})
	}
	for i, err := range startAll(t, s, ctx, acquire) {
		if err != nil {
			t.Fatalf("Start(acquire r%d) = %v", i, err)
		}
	}
	for _, step := range []struct {
		name  string
		calls []lock.Call
	}{{"extend", extend}, {"release", release}} {
		if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
			t.Fatal(err)
		}
		for i, err := range startAll(t, s, ctx, step.calls) {
			if i%2 == 0 && err != nil {
				t.Errorf("Start(%s r%d) by its holder after SCRIPT FLUSH = %v; want nil", step.name, i, err)
			}
			if i%2 == 1 && !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("Start(%s r%d) with a wrong token after SCRIPT FLUSH = %v; want ErrNotHeld", step.name, i, err)
			}
		}
	}
	for i := range n {
		held, err := s.Exists(ctx, fmt.Sprintf("r%d", i))
		if err != nil || held != (i%2 == 1) {
			t.Errorf("Exists(r%d) = %v, %v; want %v", i, held, err, i%2 == 1)
		}
	}
}

// A started call on a stalled server is answered by its context's
// deadline, with an error that is no lock outcome; calls started later,
// once the server answers again, go through.
func (f Factory) testStartOnStalledServer(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "held", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	errs := startAll(t, s, short, []lock.Call{
		{Op: lock.CallAcquire, Resource: "held", Token: "a", TTL: time.Minute},
		{Op: lock.CallAcquire, Resource: "free", Token: "a", TTL: time.Minute},
		{Op: lock.CallRelease, Resource: "held", Token: "a"},
		{Op: lock.CallExtend, Resource: "held", Token: "a", TTL: time.Minute},
	})
	elapsed := time.Since(start)
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("started call %d on a paused server = %v; want an error that is no lock outcome", i, err)
		}
	}
	t.Logf("answered %v after the calls started, with a 200ms deadline", elapsed)
	if err := s.Release(ctx, "free", "a"); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release(free, a) after resume = %v", err)
	}
	errs = startAll(t, s, ctx, []lock.Call{{Op: lock.CallRelease, Resource: "held", Token: "holder"}})
	if errs[0] != nil {
		t.Fatalf("Start(release held, holder) after resume = %v; want nil", errs[0])
	}
}
