package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/stores/postgres"
)

// storeGoroutines returns the stacks of the goroutines started since
// base that run the store's code (its listener, its background sweeps,
// a WaitRelease), waiting up to 10s for them to end: Close has ended them
// when it returns, but a goroutine that has closed its last channel may
// not have returned yet.
func storeGoroutines(base faultkit.GoroutineSet) []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var own []string
		for _, g := range base.Leaked(0) {
			if strings.Contains(g, "lock/stores/postgres.") {
				own = append(own, g)
			}
		}
		if len(own) == 0 || time.Now().After(deadline) {
			return own
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close ends what the store runs of its own — the listening connection
// and its goroutine, a background sweep — before it returns: waiting
// callers get ErrClosed, later ones too without listening again, the
// other calls go on working through the pool, and once the pool is closed
// nothing of the store or the pool is left running.
func TestCloseEndsTheStoresOwnWork(t *testing.T) {
	url, observe := sharedURL(t), shared(t) // fixtures, started before the count
	base := faultkit.Goroutines()
	pool := poolOf(t, url)
	s := newStore(t, pool, postgres.WithSweepInterval(time.Nanosecond))
	ctx := ctxFor(t, time.Minute)
	if err := s.Acquire(ctx, "r", "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 2)
	for range 2 {
		go func() { waited <- s.WaitRelease(ctx, "r") }()
	}
	eventually(t, "two in line", func() bool { return s.Waiting("r") == 2 })
	if err := s.Acquire(ctx, "swept", "a", time.Hour); err != nil { // starts a background sweep
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if s.Listening() {
		t.Error("Listening() = true after Close; want false")
	}
	for i := range 2 {
		if err := <-waited; !errors.Is(err, lock.ErrClosed) {
			t.Errorf("WaitRelease(r) #%d across Close = %v; want ErrClosed", i+1, err)
		}
	}
	// The callers have returned; what the store ran ended before Close
	// returned.
	if own := storeGoroutines(base); len(own) > 0 {
		t.Errorf("%d goroutines of the store still run after Close; want none:\n%s", len(own), strings.Join(own, "\n\n"))
	}
	if err := s.WaitRelease(ctx, "r"); !errors.Is(err, lock.ErrClosed) {
		t.Errorf("WaitRelease(r) after Close = %v; want ErrClosed", err)
	}
	if s.Listening() {
		t.Error("Listening() = true after a WaitRelease after Close; want false")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() again = %v; want nil", err)
	}
	// The other calls go on; Sweep too, though none starts on its own.
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Errorf("Release(r, a) after Close = %v; want nil", err)
	}
	if err := s.Acquire(ctx, "later", "b", time.Hour); err != nil {
		t.Errorf("Acquire(later) after Close = %v; want nil", err)
	}
	if own := storeGoroutines(base); len(own) > 0 {
		t.Errorf("an acquisition after Close started %d goroutines of the store (a sweep?); want none:\n%s", len(own), strings.Join(own, "\n\n"))
	}
	if _, err := s.Sweep(ctx); err != nil {
		t.Errorf("Sweep after Close = %v; want nil", err)
	}
	eventually(t, "no session listening", func() bool { return listeners(t, observe, s) == 0 })
	pool.Close()
	if leaked := base.Leaked(10 * time.Second); len(leaked) > 0 {
		t.Errorf("%d goroutines left once the store was closed and then its pool:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}

// A store dropped while its listening connection lingers after the last
// waiting caller left: Close ends it at once.
func TestCloseEndsALingeringListener(t *testing.T) {
	url := sharedURL(t)
	base := faultkit.Goroutines()
	pool := poolOf(t, url)
	s := newStore(t, pool)
	ctx := ctxFor(t, time.Minute)
	if err := s.WaitRelease(ctx, "free"); err != nil {
		t.Fatalf("WaitRelease(free) = %v; want nil", err)
	}
	if !s.Listening() {
		t.Fatal("Listening() = false right after a WaitRelease; want the connection to linger")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if s.Listening() {
		t.Error("Listening() = true after Close; want false")
	}
	if own := storeGoroutines(base); len(own) > 0 {
		t.Errorf("%d goroutines of the store still run after Close; want none:\n%s", len(own), strings.Join(own, "\n\n"))
	}
	pool.Close()
	if leaked := base.Leaked(10 * time.Second); len(leaked) > 0 {
		t.Errorf("%d goroutines left once the store was closed and then its pool:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}
