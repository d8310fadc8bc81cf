package postgres_test

import (
	"context"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock/stores/postgres"
)

// heldCheck holds, once armed, the answer of the next holder check (the
// SELECT a woken waiter makes) until proceed is closed, after telling
// checked.
type heldCheck struct {
	armed            atomic.Bool
	checked, proceed chan struct{}
}

type heldCheckKey struct{}

func (h *heldCheck) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, "SELECT token FROM") && h.armed.CompareAndSwap(true, false) {
		return context.WithValue(ctx, heldCheckKey{}, true)
	}
	return ctx
}

func (h *heldCheck) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(heldCheckKey{}) != nil {
		close(h.checked)
		<-h.proceed
	}
}

// A waiter woken by a notification of another lock of the resource (a
// late one, or another table's lock of the same name) checks the holder
// and finds the lock it waits for still held. If that lock is released
// while the check's answer is on its way, the release's notification
// finds the only waiter woken already: the waiter must check again, not
// go back to waiting for a lock that is gone until its TTL runs out.
func TestWaitReleaseSeesAReleaseDuringAVainWake(t *testing.T) {
	check := &heldCheck{checked: make(chan struct{}), proceed: make(chan struct{})}
	pool := poolOf(t, sharedURL(t), func(c *pgxpool.Config) { c.ConnConfig.Tracer = check })
	s := newStore(t, pool, postgres.WithSweepInterval(0))
	ctx := ctxFor(t, time.Minute)
	if err := s.Acquire(ctx, "r", "t1", time.Hour); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.WaitRelease(waitCtx, "r") }()
	eventually(t, "a caller in line", func() bool { return s.Waiting("r") == 1 })

	check.armed.Store(true)
	if _, err := shared(t).Exec(ctx, "SELECT pg_notify($1, $2)", s.Channel(t), hex.EncodeToString([]byte("r"))); err != nil {
		t.Fatal(err)
	}
	<-check.checked // the check found t1 holding r; its answer is held back
	if err := s.Release(ctx, "r", "t1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the release's notification dispatched", func() bool { return s.Notes("r") == 2 })
	close(check.proceed)
	if err := <-done; err != nil {
		t.Errorf("WaitRelease(r), r released while a vain wake's check was under way = %v; want nil (the release was missed)", err)
	}
}
