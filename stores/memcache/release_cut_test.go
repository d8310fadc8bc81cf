package memcache_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// answerLost is a connection that, once armed, lets a meta delete ("md")
// reach memcached and be answered, and then loses the answer, as a
// connection cut just then does: the delete took effect, and the caller
// reads EOF.
type answerLost struct {
	net.Conn
	armed *atomic.Bool
	lost  bool
}

func (c *answerLost) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil && bytes.HasPrefix(b, []byte("md ")) && c.armed.CompareAndSwap(true, false) {
		_, err = bufio.NewReader(c.Conn).ReadString('\n') // the answer: the delete ran
		c.lost = true
	}
	return n, err
}

func (c *answerLost) Read(b []byte) (int, error) {
	if c.lost {
		_ = c.Conn.Close()
		return 0, io.EOF
	}
	return c.Conn.Read(b)
}

// A release by CAS id whose answer was lost with its connection, after
// memcached ran the delete, cannot tell its outcome when the delete sent
// again finds another item (a new owner took the free lock in between):
// it reports the failure, not ErrNotHeld — the caller's lock was held,
// and the lost delete may be what freed it.
func TestReleaseByCASWithItsAnswerLostIsNoNotHeld(t *testing.T) {
	srv := memcachetest.Start(t, nil)
	other := newStore(t, srv.Client(t), memcache.WithPrefix("p:"))
	client := srv.Client(t)
	client.MaxIdleConns = 1
	var armed, takeOver atomic.Bool
	client.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if takeOver.CompareAndSwap(true, false) {
			// Between the lost answer and the delete sent again, another
			// owner takes the free lock.
			if err := other.Acquire(context.Background(), "r", "b", time.Minute); err != nil {
				t.Errorf("the other owner's Acquire(r, b) = %v; want nil", err)
			}
		}
		nc, err := new(net.Dialer).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &answerLost{Conn: nc, armed: &armed}, nil
	}
	s := newStore(t, client, memcache.WithPrefix("p:"), memcache.WithServer(srv.Addr()))
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	if err := s.Acquire(ctx, "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, ok := memcache.RecordedCAS(s, "r", "a"); !ok {
		t.Fatal("no CAS id recorded for Acquire(r, a): the release would not be by CAS id")
	}
	armed.Store(true)
	takeOver.Store(true)
	err := s.Release(ctx, "r", "a")
	if it, found := item(t, srv, "p:r"); !found || it.Value != "b" {
		t.Fatalf("the item of r after the release = %+v, %v; want the other owner's (b)", it, found)
	}
	if err == nil || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, a), its delete run and its answer lost, a new owner in since = %v; want the failure, not ErrNotHeld nor nil", err)
	}
}
