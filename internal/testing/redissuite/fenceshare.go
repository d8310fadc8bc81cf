package redissuite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testConformanceSharedBatches runs the kit on stores that send every
// acquisition in a shared batch (ShareBatches), as they do under load.
func (f Factory) testConformanceSharedBatches(t *testing.T) {
	client := f.Client(t, redistest.Start(t))
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		s := f.On(t, client)
		redisstore.ShareBatches(f.Engine(s))
		return s
	}, nil)
}

// testFencesShared: many goroutines taking fenced locks at once share
// fence increments (INCRBY runs on the server), and every fence is still
// unique and greater than the fence of the resource's previous holder.
func (f Factory) testFencesShared(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, time.Minute)
	const workers, rounds = 32, 40
	var (
		mu      sync.Mutex
		seen    = map[uint64]string{}
		hotLast uint64 // the fence of hot's last holder, written while it held hot
		wg      sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			token := fmt.Sprint("w", w)
			for i := range rounds {
				r := "hot"
				if i%2 == 1 {
					r = fmt.Sprintf("fresh-%d-%d", w, i)
				}
				fence, err := s.AcquireFenced(ctx, r, token, time.Minute)
				if errors.Is(err, lock.ErrNotAcquired) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("AcquireFenced(%s) = %v", r, err)
					return
				}
				mu.Lock()
				if other, dup := seen[fence]; dup {
					t.Errorf("AcquireFenced(%s) = fence %d, the fence of a lock on %s too; want every fence unique", r, fence, other)
				}
				seen[fence] = r
				if r == "hot" {
					if fence <= hotLast {
						t.Errorf("AcquireFenced(hot) = fence %d after a holder of fence %d; want greater", fence, hotLast)
					}
					hotLast = fence
				}
				mu.Unlock()
				if err := s.Release(ctx, r, token); err != nil {
					errs <- fmt.Errorf("Release(%s) = %v", r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := commandCalls(t, srv, "incrby"); n == 0 {
		t.Errorf("INCRBY ran 0 times for %d fences taken by %d goroutines at once; want fence increments shared", len(seen), workers)
	}
}

// testFencedClaimAfterScriptFlush: a fenced acquisition that claims a
// lock reserved for its process (a woken waiter's), sent in a batch
// after SCRIPT FLUSH, is answered NOSCRIPT; its fence is counted after
// the claim has taken the lock, not taken from the increment sent with
// the refused claim, which ran before the lock was held.
func (f Factory) testFencedClaimAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	s := f.Server(t, srv, redisstore.WithPrefix("fc:"))
	holder := f.Server(t, srv, redisstore.WithPrefix("fc:"))
	redisstore.ShareBatches(f.Engine(s))
	redisstore.HoldLifts(f.Engine(s))
	fencedCycle(t, ctx, s, "warm") // s reads the server's clock
	// The counter far ahead of the clock: no lift changes its next value.
	if err := s.RaiseFence(ctx, "r", 4e15); err != nil {
		t.Fatal(err)
	}
	if err := holder.Acquire(ctx, "r", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.WaitRelease(ctx, "r") }()
	waitersInLine(t, srv, "fc:{r}", 1)
	if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
		t.Fatal(err)
	}
	if err := holder.Release(ctx, "r", "h"); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("WaitRelease(r) = %v; want nil", err)
	}
	last, _, err := s.LastFence(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	fence, err := s.AcquireFenced(ctx, "r", "s", time.Minute)
	if err != nil {
		t.Fatalf("the woken waiter's AcquireFenced(r) after SCRIPT FLUSH = %v; want a fence", err)
	}
	if fence <= last+1 {
		t.Errorf("AcquireFenced(r) claiming after SCRIPT FLUSH = fence %d, the counter was %d; want a fence counted after the claim (> %d), not the increment sent with the refused claim", fence, last, last+1)
	}
}

// testSharedCallsAnswerTheirOwn: calls sent in shared batches, many of
// them ended by their contexts while their batch is under way, each get
// their own outcome: an acquisition reported taken holds the caller's
// token on the server, and one reported refused or failed is not the
// caller's (the store reuses the calls of its batches).
func (f Factory) testSharedCallsAnswerTheirOwn(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("own:"))
	redisstore.ShareBatches(f.Engine(s))
	ctx := ctxFor(t, time.Minute)
	const workers, rounds, resources = 16, 60, 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				r := fmt.Sprint("r", (w+i)%resources)
				token := fmt.Sprintf("w%d-%d", w, i)
				// Every third call is canceled by another goroutine as it
				// starts: at any point of the call, often while its batch
				// is on the wire.
				cctx, cancel := context.WithCancel(ctx)
				if i%3 == 0 {
					go cancel()
				}
				var err error
				if i%2 == 0 {
					_, err = s.AcquireFenced(cctx, r, token, time.Minute)
				} else {
					err = s.Acquire(cctx, r, token, time.Minute)
				}
				cancel()
				got, gerr := srv.Do("GET", "own:{"+r+"}").ToString()
				switch {
				case err == nil && (gerr != nil || got != token):
					t.Errorf("Acquire(%s, %s) = nil, but the lock holds %q (%v); want the caller's token", r, token, got, gerr)
				case err != nil && gerr == nil && got == token && errors.Is(err, lock.ErrNotAcquired):
					t.Errorf("Acquire(%s, %s) = %v, but the lock holds the caller's token", r, token, err)
				}
				// Release whatever this caller may hold (an unknown
				// outcome may have taken the lock).
				if rerr := s.Release(ctx, r, token); rerr != nil && !errors.Is(rerr, lock.ErrNotHeld) {
					t.Errorf("Release(%s, %s) = %v", r, token, rerr)
				}
			}
		})
	}
	wg.Wait()
}
