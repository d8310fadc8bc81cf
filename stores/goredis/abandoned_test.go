package goredis

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redissuite"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// The tests below hold a command of the store on its way to the server
// (its connection's write waits at a gate), end its caller's context, and
// release the lock it may take, as a locker cleaning up after an
// acquisition of unknown outcome does: the release must not overtake the
// acquisition on another connection of the pool, even when the release's
// own context ends while it waits for the acquisition — or the lock is
// left held, by a caller who was told it failed, until its TTL runs out.

// gate holds, once armed, the first write of the client's connections
// that carries a marker, until it is opened; every other write passes.
type gate struct {
	mu     sync.Mutex
	marker []byte
	held   chan struct{} // closed once a write is held
	opened chan struct{} // closed by open
}

func newGate() *gate { return &gate{held: make(chan struct{}), opened: make(chan struct{})} }

// arm makes the next write carrying marker wait for open.
func (g *gate) arm(marker string) {
	g.mu.Lock()
	g.marker = []byte(marker)
	g.mu.Unlock()
}

// open lets the held write, and any later, through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.opened:
	default:
		close(g.opened)
	}
}

// dial is a go-redis Dialer whose connections write through g.
func (g *gate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return gatedConn{c, g}, nil
}

type gatedConn struct {
	net.Conn
	g *gate
}

func (c gatedConn) Write(b []byte) (int, error) {
	g := c.g
	g.mu.Lock()
	hold := g.marker != nil && bytes.Contains(b, g.marker)
	if hold {
		g.marker = nil
		close(g.held)
	}
	g.mu.Unlock()
	if hold {
		<-g.opened
	}
	return c.Conn.Write(b)
}

// gated returns a server, a store on it through a client whose writes go
// through a gate, and the gate; with ctxTimeouts the client bounds
// commands by their context's deadline. The store's scripts are loaded.
func gated(t *testing.T, ctxTimeouts bool) (*redistest.Server, *redisstore.Store, client, *gate) {
	t.Helper()
	srv := redistest.Start(t)
	g := newGate()
	t.Cleanup(g.open)
	rc := redis.NewClient(&redis.Options{
		Addr:                  srv.Addr(),
		Dialer:                g.dial,
		ReadTimeout:           20 * time.Second,
		WriteTimeout:          20 * time.Second,
		ContextTimeoutEnabled: ctxTimeouts,
	})
	t.Cleanup(func() { _ = rc.Close() })
	c, _, err := glue(rc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(c, "goredis", "gated", nil, []Option{WithPrefix("gated:")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := redissuite.CtxFor(t, 10*time.Second)
	if err := s.Acquire(ctx, "warm", "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "warm", "w"); err != nil {
		t.Fatal(err)
	}
	return srv, s, c, g
}

// releaseWhileHeld releases resource under token with a short context
// while the gate holds SETs (sets of them) under that token, then opens the gate,
// and checks that the release was not lost: once the SETs have run, the
// lock is free.
func releaseWhileHeld(t *testing.T, srv *redistest.Server, s *redisstore.Store, g *gate, resource, token string, sets int) {
	t.Helper()
	ctx := redissuite.CtxFor(t, 30*time.Second)
	rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := s.Release(rctx, resource, token)
	cancel()
	if errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(%s, %s) while the acquisition under %s is on its way = %v; want it to wait for the acquisition", resource, token, token, err)
	}
	before := setCalls(t, srv)
	g.open()
	key := redisstore.LockKey("gated:", resource)
	redissuite.Eventually(t, "the abandoned acquisition run, and its lock freed by the release", func() bool {
		ran := setCalls(t, srv) >= before+sets
		n, err := srv.Do("EXISTS", key).AsInt64()
		return ran && err == nil && n == 0
	})
}

// setCalls returns how many SET commands srv has run.
func setCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats").ToString()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatalf("INFO commandstats: %q: %v", line, err)
			}
			return n
		}
	}
	return 0
}

// TestReleaseAfterCanceledAcquire: an acquisition whose context is
// canceled while its SET is on its way is answered at once; a Release of
// its token whose context ends while it waits for that SET must still be
// sent once the SET has ended, or nothing releases the lock it takes.
func TestReleaseAfterCanceledAcquire(t *testing.T) {
	for _, c := range []struct {
		name        string
		ctxTimeouts bool   // whether the client bounds commands by their context's deadline
		token, call string // call: the acquisition, as its failure names it
		start       func(ctx context.Context, s *redisstore.Store, token string, answered chan<- error)
	}{
		// An Acquire on a client that does not bound commands by their
		// context returns at once.
		{"AbandonedAcquire", false, "tok-abandoned", "Acquire(r) canceled while its SET is held",
			func(ctx context.Context, s *redisstore.Store, token string, answered chan<- error) {
				go func() { answered <- s.Acquire(ctx, "r", token, time.Minute) }()
			}},
		// A started acquisition (lock.Starter, as a MultiLocker makes them,
		// and as acquisitions under load go out) is answered by its own
		// context while its batch is still on its way, also on a client that
		// bounds commands by their context's deadline.
		{"StartedAcquireAnsweredByContext", true, "tok-started", "Start(acquire r) canceled while its batch is held",
			func(ctx context.Context, s *redisstore.Store, token string, answered chan<- error) {
				s.Start(ctx, lock.Call{Op: lock.CallAcquire, Resource: "r", Token: token, TTL: time.Minute}, func(_ uint64, err error) { answered <- err })
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, s, _, g := gated(t, c.ctxTimeouts)
			ctx := redissuite.CtxFor(t, 30*time.Second)
			g.arm(c.token)
			actx, cancel := context.WithCancel(ctx)
			answered := make(chan error, 1)
			c.start(actx, s, c.token, answered)
			<-g.held
			cancel()
			if err := <-answered; !errors.Is(err, context.Canceled) {
				t.Fatalf("%s = %v; want context.Canceled", c.call, err)
			}
			releaseWhileHeld(t, srv, s, g, "r", c.token, 1)
		})
	}
}

// TestReleaseAfterAbandonedPipeline: a pipeline abandoned by its caller is
// waited for by a release of any lock it touches, not only of its first
// command's key.
func TestReleaseAfterAbandonedPipeline(t *testing.T) {
	srv, s, c, g := gated(t, false)
	ctx := redissuite.CtxFor(t, 30*time.Second)
	g.arm("tok-second")
	actx, cancel := context.WithCancel(ctx)
	cmds := []redisstore.Cmd{
		{Name: "SET", NKeys: 1, Keys: [3]string{redisstore.LockKey("gated:", "first")}, NArgs: 4, Args: [5]string{"tok-first", "NX", "PX", "60000"}},
		{Name: "SET", NKeys: 1, Keys: [3]string{redisstore.LockKey("gated:", "second")}, NArgs: 4, Args: [5]string{"tok-second", "NX", "PX", "60000"}},
	}
	replies := make([]redisstore.Reply, len(cmds))
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		c.DoMulti(actx, cmds, replies, false)
	}()
	<-g.held
	cancel()
	<-sent
	if !errors.Is(replies[1].Err, context.Canceled) {
		t.Fatalf("DoMulti canceled while held answered %+v; want context.Canceled", replies[1])
	}
	releaseWhileHeld(t, srv, s, g, "second", "tok-second", 2)
}
