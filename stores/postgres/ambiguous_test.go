package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// Each call whose statement reached the server but whose reply was lost
// (the connection reset after it) returns an error — never
// ErrNotAcquired or ErrNotHeld, which would tell the lockers there is
// nothing to clean up — and what the call did stays on the server until
// its TTL at most. The positive control takes errors for answers.
func TestAmbiguousOutcomes(t *testing.T) {
	for _, control := range []bool{false, true} {
		name := "store"
		if control {
			name = "control-errors-taken-for-answers"
		}
		t.Run(name, func(t *testing.T) {
			srv := pgtest.Shared(t)
			proxy, err := faultproxy.New(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = proxy.Close() })
			ctx := ctxFor(t, 30*time.Second)
			direct := newStore(t, shared(t)) // the observer, and the table
			pool := poolOf(t, strings.Replace(srv.URL(""), srv.Addr(), proxy.Addr(), 1), func(c *pgxpool.Config) { c.MaxConns = 1 })
			s, err := postgres.New(pool, postgres.WithTable(direct.Schema(), "locks"))
			if err != nil {
				t.Fatal(err)
			}
			var store interface {
				lock.Store
				lock.Extender
			} = s
			if control {
				store = misclassifyingExtender{misclassifying{Store: s}}
			}
			// lost runs call with every reply lost, once the server shows
			// effect happened, resets the connection, and returns call's
			// error.
			lost := func(what string, call func() error, effect func() bool) error {
				t.Helper()
				// One connection, open, with the statements prepared (pgx
				// prepares a statement on its first use, a round trip of
				// its own).
				if err := errors.Join(s.Acquire(ctx, "warm", "t", time.Minute), s.Extend(ctx, "warm", "t", time.Minute), s.Release(ctx, "warm", "t")); err != nil {
					t.Fatal(err)
				}
				dropped := proxy.Dropped(faultproxy.ToClient)
				proxy.Set(faultproxy.ToClient, faultproxy.Drop())
				done := make(chan error, 1)
				go func() { done <- call() }()
				eventually(t, what+" applied", effect)
				// The server applies the statement before it sends the
				// reply: heal only once the reply is lost, or it passes.
				eventually(t, what+"'s reply dropped", func() bool { return proxy.Dropped(faultproxy.ToClient) > dropped })
				proxy.Heal() // resets the connection that lost the reply
				return <-done
			}
			held := func(r string) func() bool {
				return func() bool { h, err := direct.Exists(ctx, r); return err == nil && h }
			}
			const ttl = 2 * time.Second
			var errs []error
			errs = append(errs, lost("Acquire", func() error { return store.Acquire(ctx, "a", "t", ttl) }, held("a")))
			if err := direct.Acquire(ctx, "b", "t", time.Minute); err != nil {
				t.Fatal(err)
			}
			errs = append(errs, lost("Release", func() error { return store.Release(ctx, "b", "t") },
				func() bool { return !held("b")() }))
			if err := direct.Acquire(ctx, "c", "t", 10*time.Second); err != nil {
				t.Fatal(err)
			}
			errs = append(errs, lost("Extend", func() error { return store.Extend(ctx, "c", "t", time.Minute) },
				func() bool { left, _, err := direct.TTL(ctx, "c"); return err == nil && left > 30*time.Second }))
			wrong := 0
			for i, err := range errs {
				if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) {
					wrong++
					if !control {
						t.Errorf("call %d with its reply lost = %v; want an error of unknown outcome", i, err)
					}
				}
			}
			if control && wrong == 0 {
				t.Fatal("the control took no error for an answer: the check is blind")
			}
			// The lock taken behind the lost reply goes with its TTL.
			start := time.Now()
			for held("a")() {
				if time.Since(start) > ttl+2*time.Second {
					t.Fatalf("the lock taken with a lost reply is still held %v on; want it gone after its TTL (%v)", time.Since(start), ttl)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

type misclassifyingExtender struct{ misclassifying }

func (m misclassifyingExtender) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := m.Store.Extend(ctx, resource, token, ttl); err != nil {
		return lock.ErrNotHeld
	}
	return nil
}
