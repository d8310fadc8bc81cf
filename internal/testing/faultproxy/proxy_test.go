package faultproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/testserver"
)

// The proxy is tested in front of a real redis-server: a request–reply
// protocol whose server state can be read directly, bypassing the proxy.

// quiet is how long a test waits to conclude that nothing arrives. It
// only ever makes a test pass more slowly, never fail: the proxy holds or
// drops what it is asked to, whatever the machine's speed.
const quiet = 100 * time.Millisecond

// patience bounds every wait for something that must arrive.
const patience = 10 * time.Second

func startRedis(t *testing.T) *testserver.Process {
	t.Helper()
	path := testserver.LookPath(t, "redis-server", "apt-get install -y redis-server")
	port := testserver.FreePort(t)
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	return testserver.Start(t, "redis-server", path, args, port, t.TempDir())
}

// newProxy starts a proxy to target, closed at the end of the test, which
// then checks that no goroutine of the proxy is left.
func newProxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	base := faultkit.Goroutines()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if leaked := base.Leaked(patience); len(leaked) > 0 {
			t.Errorf("%d goroutines left after Close:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
	return p
}

// client is a minimal RESP client.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *client) send(args ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.c.Write([]byte(b.String())); err != nil {
		c.t.Fatalf("sending %v: %v", args, err)
	}
}

// reply reads one reply (simple, error, integer or bulk) within d.
func (c *client) reply(d time.Duration) (string, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if n, ok := strings.CutPrefix(line, "$"); ok && n != "-1" {
		size, _ := strconv.Atoi(n)
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return "", err
		}
		return string(buf[:size]), nil
	}
	return line, nil
}

// do sends a command and returns its reply, failing the test without one.
func (c *client) do(args ...string) string {
	c.t.Helper()
	c.send(args...)
	r, err := c.reply(patience)
	if err != nil {
		c.t.Fatalf("%v: %v", args, err)
	}
	return r
}

// ping dials addr and sends a PING, returning the first error met.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(patience))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

// isReset reports whether err is a connection reset by the peer, whether
// met on connecting, writing or reading.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// eventually polls cond until it holds, failing the test after patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPass(t *testing.T) {
	srv := startRedis(t)
	p := newProxy(t, srv.Addr())
	c := dial(t, p.Addr())
	if got := c.do("PING"); got != "+PONG" {
		t.Fatalf("PING through the proxy = %q", got)
	}
	if got := c.do("SET", "k", strings.Repeat("x", 100_000)); got != "+OK" { // larger than one chunk
		t.Fatalf("SET = %q", got)
	}
	if got := c.do("STRLEN", "k"); got != ":100000" {
		t.Fatalf("STRLEN = %q, want :100000", got)
	}
	if p.Conns() != 1 {
		t.Errorf("Conns() = %d, want 1", p.Conns())
	}
}

// Delayed chunks keep their order, and a round trip takes at least the
// minimum latency of both directions.
func TestDelay(t *testing.T) {
	srv := startRedis(t)
	p := newProxy(t, srv.Addr())
	c := dial(t, p.Addr())
	const latency, jitter = 20 * time.Millisecond, 15 * time.Millisecond
	p.Set(faultproxy.Both, faultproxy.Delay(latency, jitter))
	if got := p.Mode(faultproxy.ToClient).String(); got != "delay 20ms±15ms" {
		t.Errorf("Mode = %q", got)
	}
	start := time.Now()
	if got := c.do("PING"); got != "+PONG" {
		t.Fatalf("PING = %q", got)
	}
	if rtt := time.Since(start); rtt < 2*(latency-jitter) {
		t.Errorf("round trip took %v, less than the minimum latency of both ways, %v", rtt, 2*(latency-jitter))
	}
	// Many commands sent one by one, so that each is its own chunk with
	// its own random delay: the replies still come in order.
	for range 50 {
		c.send("INCR", "n")
	}
	for i := 1; i <= 50; i++ {
		r, err := c.reply(patience)
		if err != nil || r != ":"+strconv.Itoa(i) {
			t.Fatalf("reply %d = %q, %v; want :%d (in order)", i, r, err, i)
		}
	}
}

// Hold is a partition: nothing passes, connections stay open, and what
// was sent is delivered in order once it heals.
func TestHold(t *testing.T) {
	srv := startRedis(t)
	p := newProxy(t, srv.Addr())
	direct := dial(t, srv.Addr())
	c := dial(t, p.Addr())
	c.do("PING") // connected before the partition
	p.Set(faultproxy.Both, faultproxy.Hold())
	c.send("SET", "k", "v")
	c.send("INCR", "n")
	late := dial(t, p.Addr()) // connected during the partition
	late.send("PING")
	if _, err := c.reply(quiet); !isTimeout(err) {
		t.Fatalf("a reply got through a hold: %v", err)
	}
	if _, err := late.reply(quiet); !isTimeout(err) {
		t.Fatalf("a reply got through a hold on a new connection: %v", err)
	}
	if got := direct.do("EXISTS", "k"); got != ":0" {
		t.Fatalf("the server received a held request: EXISTS k = %s", got)
	}
	p.Heal()
	for _, want := range []string{"+OK", ":1"} {
		if r, err := c.reply(patience); err != nil || r != want {
			t.Fatalf("after healing: reply %q, %v; want %q", r, err, want)
		}
	}
	if r, err := late.reply(patience); err != nil || r != "+PONG" {
		t.Fatalf("after healing, new connection: %q, %v", r, err)
	}
	if got := direct.do("GET", "k"); got != "v" {
		t.Fatalf("after healing GET k = %q", got)
	}
}

// Dropping replies only: the server applies the command, the client never
// hears, and its connection, which lost bytes, is reset on healing.
func TestDropReplies(t *testing.T) {
	srv := startRedis(t)
	p := newProxy(t, srv.Addr())
	direct := dial(t, srv.Addr())
	c := dial(t, p.Addr())
	c.do("PING")
	p.Set(faultproxy.ToClient, faultproxy.Drop())
	c.send("SET", "k", "applied")
	eventually(t, "the server applies the command", func() bool { return direct.do("GET", "k") == "applied" })
	eventually(t, "the proxy drops the reply", func() bool { return p.Dropped(faultproxy.ToClient) == 1 })
	if r, err := c.reply(quiet); !isTimeout(err) {
		t.Fatalf("a dropped reply arrived: %q, %v", r, err)
	}
	if n := p.Dropped(faultproxy.ToServer); n != 0 {
		t.Errorf("Dropped(ToServer) = %d while only replies were dropped; want 0", n)
	}
	p.Heal()
	if r, err := c.reply(patience); err == nil || isTimeout(err) {
		t.Fatalf("after healing, the connection that lost a reply gave %q, %v; want it reset", r, err)
	}
	// New connections work.
	if got := dial(t, p.Addr()).do("GET", "k"); got != "applied" {
		t.Fatalf("new connection after healing: GET k = %q", got)
	}
}

// Dropping requests: the server never sees them.
func TestDropRequests(t *testing.T) {
	srv := startRedis(t)
	p := newProxy(t, srv.Addr())
	direct := dial(t, srv.Addr())
	c := dial(t, p.Addr())
	c.do("PING")
	p.Set(faultproxy.ToServer, faultproxy.Drop())
	c.send("SET", "k", "v")
	if _, err := c.reply(quiet); !isTimeout(err) {
		t.Fatalf("a reply to a dropped request: %v", err)
	}
	if got := direct.do("EXISTS", "k"); got != ":0" {
		t.Fatalf("the server received a dropped request: EXISTS k = %s", got)
	}
	if n := p.Dropped(faultproxy.ToServer); n != 1 {
		t.Errorf("Dropped(ToServer) = %d after one dropped request; want 1", n)
	}
}

// Reset sends an RST to both peers; Refuse resets new connections.
func TestResetAndRefuse(t *testing.T) {
	srv := startRedis(t)
	p := newProxy(t, srv.Addr())
	direct := dial(t, srv.Addr())
	clients := func() int { return strings.Count(direct.do("CLIENT", "LIST"), "id=") }
	c := dial(t, p.Addr())
	c.do("PING")
	if n := clients(); n != 2 {
		t.Fatalf("server has %d clients, want 2 (direct and proxied)", n)
	}
	p.Reset()
	if _, err := c.reply(patience); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("client read after Reset: %v, want ECONNRESET", err)
	}
	eventually(t, "the server sees the proxied connection go", func() bool { return clients() == 1 })
	if p.Conns() != 0 {
		t.Errorf("Conns() = %d after Reset, want 0", p.Conns())
	}

	p.Refuse(true)
	if err := ping(p.Addr()); !isReset(err) {
		t.Fatalf("PING on a refused connection: %v, want it reset", err)
	}
	p.Refuse(false)
	if got := dial(t, p.Addr()).do("PING"); got != "+PONG" {
		t.Fatalf("PING after refusing stopped = %q", got)
	}
}

// A client whose target is down is reset, as a refused connection would be.
func TestTargetDown(t *testing.T) {
	p := newProxy(t, "127.0.0.1:"+strconv.Itoa(testserver.FreePort(t)))
	if err := ping(p.Addr()); !isReset(err) {
		t.Fatalf("PING with the target down: %v, want the connection reset", err)
	}
}

// The server closing its side is passed on in order, after the data.
func TestServerClose(t *testing.T) {
	srv := startRedis(t)
	p := newProxy(t, srv.Addr())
	c := dial(t, p.Addr())
	p.Set(faultproxy.ToClient, faultproxy.Delay(20*time.Millisecond, 0))
	c.send("QUIT")
	if r, err := c.reply(patience); err != nil || r != "+OK" {
		t.Fatalf("QUIT = %q, %v; want +OK before the close", r, err)
	}
	if _, err := c.reply(patience); !errors.Is(err, io.EOF) {
		t.Fatalf("after QUIT: %v, want EOF", err)
	}
	if p.Conns() != 1 {
		t.Errorf("Conns() = %d while the client keeps its half open, want 1", p.Conns())
	}
	c.c.Close()
	eventually(t, "the proxy drops the closed connection", func() bool { return p.Conns() == 0 })
}

// Close ends connections in every state and every goroutine of the proxy
// (newProxy checks the goroutines).
func TestClose(t *testing.T) {
	srv := startRedis(t)
	p := newProxy(t, srv.Addr())
	held := dial(t, p.Addr())
	held.do("PING")
	p.Set(faultproxy.ToServer, faultproxy.Hold())
	held.send("PING") // waiting in the proxy
	p.Set(faultproxy.ToClient, faultproxy.Delay(time.Hour, 0))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := held.reply(patience); err == nil || isTimeout(err) {
		t.Fatalf("a connection survived Close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), patience); err == nil {
		c.Close()
		t.Fatal("the proxy still accepts connections after Close")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
