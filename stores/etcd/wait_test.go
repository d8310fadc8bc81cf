package etcd_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// Waiters of one resource share one watch and take turns: each release
// wakes one of them, the longest waiting; the watch ends once they have
// all left.
func TestWaitOneWakePerRelease(t *testing.T) {
	defer etcd.SetLinger(100 * time.Millisecond)()
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client)
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	const waiters = 3
	woken := make(chan int, waiters)
	for i := range waiters {
		go func() {
			if err := s.WaitRelease(ctx, "r"); err != nil {
				t.Errorf("waiter %d: WaitRelease(r) = %v", i, err)
			}
			woken <- i
		}()
		// Arrival order: wait until this waiter is in line.
		waitFor(t, "the waiter to be in line", func() bool { return s.Waiting("r") == i+1 })
	}
	token := "holder"
	for round := range waiters {
		if err := s.Release(ctx, "r", token); err != nil {
			t.Fatalf("round %d: Release(r) = %v", round, err)
		}
		select {
		case i := <-woken:
			if i != round {
				t.Errorf("round %d: waiter %d woke first; want waiter %d, the longest waiting", round, i, round)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no waiter woke 10s after a release", round)
		}
		// The woken waiter's turn: it takes the lock, and the others
		// must stay asleep meanwhile.
		token = "next"
		if err := s.Acquire(ctx, "r", token, 10*time.Second); err != nil {
			t.Fatalf("round %d: Acquire(r) by the woken waiter = %v", round, err)
		}
		select {
		case i := <-woken:
			t.Fatalf("round %d: waiter %d woke too: one release must wake one waiter", round, i)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := s.Release(ctx, "r", token); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch to end after its waiters left", func() bool { return s.Watches() == 0 })
}

// A waiter whose context ends leaves the line; a release then wakes the
// next one.
func TestWaitLeavesTheLine(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client)
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() { left <- s.WaitRelease(short, "r") }()
	waitFor(t, "the first waiter to be in line", func() bool { return s.Waiting("r") == 1 })
	woken := make(chan error, 1)
	go func() { woken <- s.WaitRelease(ctx, "r") }()
	waitFor(t, "the second waiter to be in line", func() bool { return s.Waiting("r") == 2 })
	cancel()
	if err := <-left; err != context.Canceled {
		t.Errorf("WaitRelease with a canceled context = %v; want context.Canceled", err)
	}
	if err := s.Release(ctx, "r", "holder"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-woken:
		if err != nil {
			t.Errorf("WaitRelease(r) of the second waiter = %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second waiter did not wake 10s after the release: the first, gone, took its wake")
	}
}

// Close ends the watches that linger after their waiters left, and the
// store still waits afterwards.
func TestCloseEndsIdleWatches(t *testing.T) {
	defer etcd.SetLinger(time.Hour)()
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client)
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "r", "holder", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	woken := make(chan error, 1)
	go func() { woken <- s.WaitRelease(ctx, "r") }()
	waitFor(t, "the waiter to be in line", func() bool { return s.Waiting("r") == 1 })
	if err := s.Release(ctx, "r", "holder"); err != nil {
		t.Fatal(err)
	}
	if err := <-woken; err != nil {
		t.Fatalf("WaitRelease(r) = %v; want nil", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if n := s.Watches(); n != 0 {
		t.Errorf("after Close, the store watches %d resources; want 0: no caller waits", n)
	}
	// Still usable: a wait starts a watch again.
	if err := s.Acquire(ctx, "r", "holder", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	go func() { woken <- s.WaitRelease(ctx, "r") }()
	waitFor(t, "the waiter to be in line after Close", func() bool { return s.Waiting("r") == 1 })
	if err := s.Release(ctx, "r", "holder"); err != nil {
		t.Fatal(err)
	}
	if err := <-woken; err != nil {
		t.Errorf("WaitRelease(r) after Close = %v; want nil", err)
	}
}

// A watch that ends for want of callers (its linger ran out, or Close
// ended it) just as a caller found it — once the caller saw it ready, or
// before the caller joined its line — is no failure of the wait: the
// caller watches again, and a release wakes it.
func TestWaitOutlivesAnIdleWatchEnding(t *testing.T) {
	for name, set := range map[string]func(func()) func(){
		"once seen ready":     etcd.SetFound,
		"before joining line": etcd.SetOpened,
	} {
		t.Run(name, func(t *testing.T) {
			defer etcd.SetLinger(time.Hour)()
			client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
			s := newStore(t, client)
			ctx := ctxFor(t, 30*time.Second)
			if err := s.Acquire(ctx, "r", "holder", 10*time.Second); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			defer set(func() {
				once.Do(func() {
					if err := s.Close(ctx); err != nil {
						t.Errorf("Close() = %v", err)
					}
				})
			})()
			woken := make(chan error, 1)
			go func() { woken <- s.WaitRelease(ctx, "r") }()
			waitFor(t, "the waiter to be in line", func() bool {
				select {
				case err := <-woken:
					t.Fatalf("WaitRelease(r) of a held lock = %v as its idle watch ended; want it to wait for the release", err)
				default:
				}
				return s.Waiting("r") == 1
			})
			if err := s.Release(ctx, "r", "holder"); err != nil {
				t.Fatal(err)
			}
			if err := <-woken; err != nil {
				t.Errorf("WaitRelease(r) across Release = %v; want nil", err)
			}
		})
	}
}

// waitFor polls cond for up to 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
