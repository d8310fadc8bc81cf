package memcache_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// eachWay runs test on a store without WithServer and on one with it.
func eachWay(t *testing.T, test func(t *testing.T, withServer bool)) {
	for _, withServer := range []bool{false, true} {
		t.Run(map[bool]string{false: "client", true: "WithServer"}[withServer], func(t *testing.T) {
			t.Parallel()
			test(t, withServer)
		})
	}
}

// fenceStore returns a store with prefix "p:" over client, a client of
// srv, naming srv with WithServer if withServer, and counts the incrs it
// sends through the client.
func fenceStore(t *testing.T, srv *memcachetest.Server, client *gomemcache.Client, withServer bool, opts ...memcache.Option) (*memcache.Store, *atomic.Int32) {
	t.Helper()
	opts = append([]memcache.Option{memcache.WithPrefix("p:")}, opts...)
	if withServer {
		opts = append(opts, memcache.WithServer(srv.Addr()))
	}
	s := newStore(t, client, opts...)
	t.Cleanup(func() { _ = s.Close() })
	var incrs atomic.Int32
	memcache.SetBeforeFenceIncr(s, func(int) { incrs.Add(1) })
	return s, &incrs
}

// serverStore returns a store over a new client of srv that names srv
// with WithServer, and counts the incrs it sends through the client.
func serverStore(t *testing.T, srv *memcachetest.Server, opts ...memcache.Option) (*memcache.Store, *gomemcache.Client, *atomic.Int32) {
	t.Helper()
	client := srv.Client(t)
	s, incrs := fenceStore(t, srv, client, true, opts...)
	return s, client, incrs
}

// With WithServer, a fenced acquisition draws its fence with the add, on
// the store's own connection: no incr goes through the client, and the
// fences increase as they do through it.
func TestServerFencesWithTheAdd(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s, _, incrs := serverStore(t, srv, memcache.WithFenceGuard(0))
	var last uint64
	for i := range 50 {
		r := fmt.Sprint("invoice/", i)
		fence, err := s.AcquireFenced(ctx(t), r, "a", time.Minute)
		if err != nil || fence <= last {
			t.Fatalf("AcquireFenced(%s) = %d, %v; want a fence > %d", r, fence, err, last)
		}
		last = fence
		if it, found := item(t, srv, "p:"+r); !found || it.Value != "a" {
			t.Fatalf("the key of %s after AcquireFenced(%s, a) = %+v, found %v; want the token a", r, r, it, found)
		}
		if err := s.Release(ctx(t), r, "a"); err != nil {
			t.Fatalf("Release(%s) = %v", r, err)
		}
	}
	if n := incrs.Load(); n != 1 {
		t.Errorf("%d incrs through the client for 50 fenced acquisitions; want 1, the first, which creates the counter", n)
	}
	if it, found := item(t, srv, "p:#fence"); !found || it.Value != strconv.FormatUint(last, 10) {
		t.Fatalf("fence counter = %+v, found %v; want the last fence %d", it, found, last)
	}
}

// An add that is refused still runs its incr: the acquisition is not
// acquired, and later fences stay above every earlier one.
func TestServerRefusedAdd(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s, _, _ := serverStore(t, srv, memcache.WithFenceGuard(0))
	a, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if fence, err := s.AcquireFenced(ctx(t), "r", "b", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("AcquireFenced(r, b) while a holds r = %d, %v; want ErrNotAcquired", fence, err)
		}
	}
	if it, _ := item(t, srv, "p:r"); it.Value != "a" {
		t.Fatalf("the key of r = %+v after refused acquisitions; want a's token", it)
	}
	if err := s.Release(ctx(t), "r", "a"); err != nil {
		t.Fatal(err)
	}
	if c, err := s.AcquireFenced(ctx(t), "r", "c", time.Minute); err != nil || c <= a {
		t.Fatalf("AcquireFenced(r, c) after Release(r, a) = %d, %v; want a fence > a's %d", c, err, a)
	}
}

// Close closes the store's idle connections, as the client's Close does
// its own: the store may still be used, and fences with the add again on a
// new connection; the client stays open.
func TestServerClose(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s, client, incrs := serverStore(t, srv, memcache.WithFenceGuard(0))
	first, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Connections memcached accepted so far, this call's own included.
	conns := func() int {
		t.Helper()
		stats, err := srv.Stats()
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(stats["total_connections"])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close() = %v; want nil", err)
		}
	}
	before, dialled := incrs.Load(), conns()
	second, err := s.AcquireFenced(ctx(t), "q", "a", time.Minute)
	if err != nil || second <= first {
		t.Fatalf("AcquireFenced(q) after Close = %d, %v; want a fence > %d", second, err, first)
	}
	if n := incrs.Load() - before; n != 0 {
		t.Errorf("%d incrs through the client for a fenced acquisition after Close; want 0: the store dials again", n)
	}
	if n := conns() - dialled - 1; n != 1 {
		t.Errorf("AcquireFenced after Close opened %d connections; want 1: Close closed the idle one", n)
	}
	if _, err := client.Get("p:q"); err != nil {
		t.Errorf("client.Get after the store's Close = %v; want the client open", err)
	}
}

// A server that cannot be reached fails the acquisition: an error, not
// "not acquired", and nothing held.
func TestServerUnreachable(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	client := srv.Client(t)
	s := newStore(t, client, memcache.WithPrefix("p:"), memcache.WithServer("127.0.0.1:1"))
	t.Cleanup(func() { _ = s.Close() })
	fence, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute)
	wantFailedFree(t, s, "AcquireFenced(r, a) through an unreachable server", "r", fence, err)
}

// A pipelined add whose reply is lost fails with an error, never "not
// acquired" (the add may have taken the lock: here it did, and the
// caller's release by token frees it), and its connection is not used
// again: a later acquisition does not read the late replies as its own.
func TestServerLostReply(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	proxy, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	client := srv.Client(t)
	client.Timeout = 200 * time.Millisecond // the pipe's too
	s := newStore(t, client, memcache.WithPrefix("p:"), memcache.WithServer(proxy.Addr()), memcache.WithFenceGuard(0))
	t.Cleanup(func() { _ = s.Close() })
	first, err := s.AcquireFenced(ctx(t), "warm", "a", time.Minute) // creates the counter, leaves a connection idle
	if err != nil {
		t.Fatal(err)
	}

	proxy.Set(faultproxy.ToClient, faultproxy.Hold())
	if fence, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute); err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquireFenced(r, a) with its reply lost = %d, %v; want an error other than ErrNotAcquired", fence, err)
	}
	if it, found := item(t, srv, "p:r"); !found || it.Value != "a" {
		t.Fatalf("the key of r = %+v, found %v; want a's token: the add reached memcached", it, found)
	}
	if err := s.Release(ctx(t), "r", "a"); err != nil {
		t.Fatalf("Release(r, a) after the lost reply = %v; want nil: the lock was taken", err)
	}
	proxy.Set(faultproxy.ToClient, faultproxy.Pass()) // the held replies go out now

	second, err := s.AcquireFenced(ctx(t), "q", "b", time.Minute)
	if err != nil || second <= first+1 {
		t.Fatalf("AcquireFenced(q, b) after the lost reply = %d, %v; want a fence > %d, the lost acquisition's", second, err, first+1)
	}
	if it, _ := item(t, srv, "p:#fence"); it.Value != strconv.FormatUint(second, 10) {
		t.Fatalf("fence counter %q after AcquireFenced(q, b) = %d; want them equal: the reply read was its own", it.Value, second)
	}
}

// An add that memcached answers with an error fails the acquisition with
// memcached's own answer, named once as the add's ("memcached add:
// SERVER_ERROR …"); nothing is held, and the store goes on.
func TestServerAddError(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s, _, _ := serverStore(t, srv)
	tooLarge := strings.Repeat("t", 2<<20) // above memcached's default item size of 1 MiB
	fence, err := s.AcquireFenced(ctx(t), "r", tooLarge, time.Minute)
	wantFailedFree(t, s, "AcquireFenced(r, a 2 MiB token)", "r", fence, err)
	if msg := fmt.Sprint(err); !strings.HasPrefix(msg, "memcached add: SERVER_ERROR ") {
		t.Errorf("AcquireFenced(r, a 2 MiB token) = %q; want \"memcached add: SERVER_ERROR …\", memcached's answer", msg)
	}
	if fence, err := s.AcquireFenced(ctx(t), "r", "a", time.Minute); err != nil || fence == 0 {
		t.Fatalf("AcquireFenced(r, a) after the refused add = %d, %v; want a fence", fence, err)
	}
}

// WithServer names the server as the client was given it; the store
// resolves the name once, as the client did, and dials the address the
// client dials: a name resolved anew at each dial could send the store's
// adds to a server the client does not release them on. An address that
// cannot be resolved is refused by New, naming WithServer.
func TestServerDialsWhatTheClientDials(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	_, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	byName := net.JoinHostPort("localhost", port)
	client := gomemcache.New(byName)
	client.Timeout = memcachetest.ClientTimeout
	t.Cleanup(func() { _ = client.Close() })
	var mu sync.Mutex
	dialed := map[string]bool{}
	client.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed[network+" "+addr] = true
		mu.Unlock()
		return new(net.Dialer).DialContext(ctx, network, addr)
	}
	s := newStore(t, client, memcache.WithPrefix("p:"), memcache.WithServer(byName))
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	if _, err := s.AcquireFenced(ctx, "r", "a", time.Minute); err != nil {
		t.Fatalf("AcquireFenced(r, a) = %v; want nil", err)
	}
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatalf("Release(r, a) = %v; want nil", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 1 {
		t.Errorf("the client and the store dialed %v; want one address, the one the client resolved %q to", dialed, byName)
	}
	for a := range dialed {
		if strings.Contains(a, "localhost") {
			t.Errorf("dialed %q; want the address %q resolves to, as gomemcache dials it", a, byName)
		}
	}

	if _, err := memcache.New(client, memcache.WithServer("no-such-host.invalid:11211")); err == nil || !strings.Contains(err.Error(), "WithServer") {
		t.Errorf("New(WithServer(an unresolvable name)) = %v; want an error naming WithServer", err)
	}
}
