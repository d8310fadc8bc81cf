package postgres_test

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockkit/lock/stores/postgres"
)

// gates hold back, on the connections of one pool, the notifications the
// listening connection receives (reads) and the statements the other
// connections send (writes), until the test lets them through.
type gates struct {
	reads, writes atomic.Pointer[chan struct{}]
	wrote         chan struct{} // a write waits at the gate
}

// hold closes gate g, and returns the function that opens it again.
func (g *gates) hold(t *testing.T, gate *atomic.Pointer[chan struct{}]) (open func()) {
	ch := make(chan struct{})
	gate.Store(&ch)
	opened := false
	open = func() {
		if !opened {
			opened = true
			gate.Store(nil)
			close(ch)
		}
	}
	t.Cleanup(open)
	return open
}

// gatedConn is a connection of a gated pool. The listening connection is
// the one that sent LISTEN.
type gatedConn struct {
	net.Conn
	g         *gates
	listening atomic.Bool
}

func (c *gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.listening.Load() {
		if ch := c.g.reads.Load(); ch != nil {
			<-*ch
		}
	}
	return n, err
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("LISTEN ")) {
		c.listening.Store(true)
	}
	if !c.listening.Load() {
		if ch := c.g.writes.Load(); ch != nil {
			select {
			case c.g.wrote <- struct{}{}:
			default:
			}
			<-*ch
		}
	}
	return c.Conn.Write(b)
}

// gatedPool returns a pool of the shared server whose connections pass
// through g.
func gatedPool(t *testing.T, g *gates) *pgxpool.Pool {
	return poolOf(t, sharedURL(t), func(c *pgxpool.Config) {
		dial := c.ConnConfig.DialFunc
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &gatedConn{Conn: nc, g: g}, nil
		}
	})
}

// A release's notification that reaches a store late — after another
// owner took the resource and a caller of the store began to wait for
// that owner's lock — does not end that caller's wait: WaitRelease
// returns when the lock it found is released, as its doc says, not on a
// release that happened before it began.
func TestLateNotificationDoesNotWakeANewerWaiter(t *testing.T) {
	g := &gates{wrote: make(chan struct{}, 1)}
	s := newStore(t, gatedPool(t, g), postgres.WithSweepInterval(0))
	other, err := postgres.New(shared(t), postgres.WithTable(s.Schema(), "locks"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	ctx := ctxFor(t, time.Minute)
	// A caller of s waits for another resource all along, so that s
	// keeps its listening connection.
	if err := s.Acquire(ctx, "other", "o", time.Hour); err != nil {
		t.Fatal(err)
	}
	keep, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = s.WaitRelease(keep, "other") }()
	eventually(t, "a caller of s in line for other", func() bool { return s.Waiting("other") == 1 })

	// a holds r, waited for by a caller of another store.
	if err := s.Acquire(ctx, "r", "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- other.WaitRelease(ctx, "r") }()
	eventually(t, "the other store's caller in line", func() bool { return other.Waiting("r") == 1 })

	// a's release notifies both stores; s hears of it late.
	openReads := g.hold(t, &g.reads)
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("WaitRelease(r) of the other store across Release = %v; want nil", err)
	}
	if err := s.Acquire(ctx, "r", "b", time.Hour); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() { second <- s.WaitRelease(ctx, "r") }()
	eventually(t, "a caller of s in line for b's lock", func() bool { return s.Waiting("r") == 1 })

	// The late notification arrives: the caller may look at the lock
	// (a statement, held at the gate), but must not return.
	openWrites := g.hold(t, &g.writes)
	openReads()
	select {
	case err := <-second:
		t.Fatalf("WaitRelease(r) = %v on the late notification of a's release, while b holds r; want it waiting for b's release", err)
	case <-g.wrote:
	}
	openWrites()
	eventually(t, "the caller back in line", func() bool { return s.Waiting("r") == 1 })
	select {
	case err := <-second:
		t.Fatalf("WaitRelease(r) = %v after the late notification of a's release, while b holds r; want it waiting for b's release", err)
	default:
	}
	if err := s.Release(ctx, "r", "b"); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Errorf("WaitRelease(r) across b's release = %v; want nil", err)
	}
}
