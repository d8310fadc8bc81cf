package etcd_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/stores/etcd"
)

// Renewals go over keepalive streams the store keeps open. A renewal
// whose context ends while it waits for its answer returns the context's
// error; one whose stream breaks after it was sent (its request dropped,
// then the connection reset) returns an error, never an outcome (a TTL,
// or ErrLeaseNotFound); the next renewal opens a stream again and
// succeeds. Close leaves no stream open.
func TestRenewalStreams(t *testing.T) {
	p, err := faultproxy.New(etcdtest.Shared(t).Members[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	client := clientOf(t, p.Addr())
	s := newStore(t, client, etcd.WithPrefix("renew/"))
	ctx := ctxFor(t, time.Minute)
	before := streamGoroutines()
	id := int64(acquire(t, s, client, "renew/")) // a 5s lock
	if ttl, err := s.Renew(ctx, id); ttl != 5 || err != nil {
		t.Fatalf("Renew(the lock's lease) = %d, %v; want 5, nil", ttl, err)
	}
	if n := s.IdleStreams(); n != 1 {
		t.Fatalf("%d keepalive streams kept after one renewal; want 1", n)
	}

	p.Set(faultproxy.ToServer, faultproxy.Drop())
	cctx, cancel := context.WithCancel(ctx)
	dropped := p.Dropped(faultproxy.ToServer)
	done := make(chan error, 1)
	go func() { _, err := s.Renew(cctx, id); done <- err }()
	waitFor(t, "the renewal to be sent and dropped", func() bool { return p.Dropped(faultproxy.ToServer) > dropped })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Renew with its context canceled while it waited = %v; want context.Canceled", err)
	}
	// Start the next case on a connection of its own: what the canceled
	// renewal left to send on the old one (its stream's reset) must not
	// count below as the next renewal, dropped.
	p.Heal() // resets the connection that lost bytes
	if _, err := s.Renew(ctx, id); err != nil {
		// The kept stream broke with the connection; the next renewal
		// opens another.
		if ttl, err := s.Renew(ctx, id); ttl != 5 || err != nil {
			t.Fatalf("Renew after the connection of a canceled one was reset, twice = %d, %v; want 5, nil", ttl, err)
		}
	}

	p.Set(faultproxy.ToServer, faultproxy.Drop())
	dropped = p.Dropped(faultproxy.ToServer)
	go func() { _, err := s.Renew(ctx, id); done <- err }()
	waitFor(t, "the renewal to be sent and dropped", func() bool { return p.Dropped(faultproxy.ToServer) > dropped })
	p.Heal() // resets the connection that lost bytes
	switch err := <-done; {
	case err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound):
		t.Errorf("Renew on a stream broken after the request was sent = %v; want an error that is no outcome", err)
	case errors.Is(err, context.Canceled):
		t.Errorf("Renew on a broken stream = %v; want the stream's error, not a context's", err)
	}
	if ttl, err := s.Renew(ctx, id); ttl != 5 || err != nil {
		t.Fatalf("Renew after the stream broke = %d, %v; want 5, nil", ttl, err)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatal(err)
	}

	if got := streamGoroutines(); got <= before {
		t.Fatalf("%d goroutines of gRPC streams with the store's stream open, %d before: the count does not see it", got, before)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.IdleStreams(); n != 0 {
		t.Errorf("%d keepalive streams kept after Close; want 0", n)
	}
	waitFor(t, "the stream's goroutine to end after Close", func() bool { return streamGoroutines() <= before })
}

// streamGoroutines counts the goroutines of open gRPC client streams.
func streamGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "grpc.newClientStreamWithParams")
		}
		buf = make([]byte, 2*len(buf))
	}
}
