package memcache

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"
)

// Pipelined fences (WithServer). memcached runs the requests of one
// connection in order, so an add and an incr of the fence counter sent
// together on one connection draw the fence once the add has taken the
// lock — as the two round trips of a fenced acquisition do — in the add's
// own round trip. gomemcache sends one request at a time, so the store
// keeps connections of its own to the server named with WithServer, used
// for that pair alone; everything else goes through the client. An add
// that is refused still runs its incr: the counter only grows, and fences
// need not be consecutive.

// pipe is the store's pool of connections to its server.
type pipe struct {
	network, addr string
	client        *gomemcache.Client // its Timeout, MaxIdleConns and DialContext apply

	mu   sync.Mutex
	idle []*pipeConn
}

type pipeConn struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte // the requests, written in one call
}

// newPipe returns the pipe to addr, resolved once, now, as gomemcache's
// ServerList resolves the client's servers when it is made: the pipe then
// dials what the client dials, even if the name is later made to point
// elsewhere, or points to several addresses (a pipe that resolved it
// anew at each dial could take locks on a server the client does not
// release them on).
func newPipe(addr string, client *gomemcache.Client) (*pipe, error) {
	var resolved net.Addr
	var err error
	if strings.Contains(addr, "/") { // as gomemcache's ServerList reads a path
		resolved, err = net.ResolveUnixAddr("unix", addr)
	} else {
		resolved, err = net.ResolveTCPAddr("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	return &pipe{network: resolved.Network(), addr: resolved.String(), client: client}, nil
}

func (p *pipe) timeout() time.Duration {
	if t := p.client.Timeout; t > 0 {
		return t
	}
	return gomemcache.DefaultTimeout
}

func (p *pipe) maxIdle() int {
	if n := p.client.MaxIdleConns; n > 0 {
		return n
	}
	return gomemcache.DefaultMaxIdleConns
}

// conn returns an idle connection, or dials one.
func (p *pipe) conn() (*pipeConn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout())
	defer cancel()
	dial := p.client.DialContext
	if dial == nil {
		dial = new(net.Dialer).DialContext
	}
	nc, err := dial(ctx, p.network, p.addr)
	if err != nil {
		return nil, err
	}
	return &pipeConn{nc: nc, r: bufio.NewReader(nc)}, nil
}

// reuse keeps c for the next request, unless enough are idle.
func (p *pipe) reuse(c *pipeConn) {
	p.mu.Lock()
	if len(p.idle) < p.maxIdle() {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = c.nc.Close()
}

// close closes the idle connections.
func (p *pipe) close() error {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	var errs []error
	for _, c := range idle {
		errs = append(errs, c.nc.Close())
	}
	return errors.Join(errs...)
}

// addIncr sends "add" of key with value and exp, and "incr counter 1",
// together. stored says whether the add took the key; fence is the
// counter's new value when drawn, which it is not if the counter is
// missing (or not a number). A failure (err) leaves the add's outcome
// unknown.
func (p *pipe) addIncr(key string, value []byte, exp int32, counter string) (stored bool, fence uint64, drawn bool, err error) {
	c, err := p.conn()
	if err != nil {
		return false, 0, false, err
	}
	stored, fence, drawn, err = c.addIncr(key, value, exp, counter, p.timeout())
	if err != nil {
		_ = c.nc.Close() // what is left to read on it is unknown
		return false, 0, false, err
	}
	p.reuse(c)
	return stored, fence, drawn, nil
}

func (c *pipeConn) addIncr(key string, value []byte, exp int32, counter string, timeout time.Duration) (stored bool, fence uint64, drawn bool, err error) {
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return false, 0, false, err
	}
	b := append(c.buf[:0], "add "...)
	b = append(b, key...)
	b = append(b, " 0 "...)
	b = strconv.AppendInt(b, int64(exp), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(value)), 10)
	b = append(b, "\r\n"...)
	b = append(b, value...)
	b = append(b, "\r\nincr "...)
	b = append(b, counter...)
	b = append(b, " 1\r\n"...)
	c.buf = b
	if _, err := c.nc.Write(b); err != nil {
		return false, 0, false, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return false, 0, false, err
	}
	switch {
	case bytes.Equal(line, []byte("STORED\r\n")):
		stored = true
	case bytes.Equal(line, []byte("NOT_STORED\r\n")):
	default:
		// An error line: whether the value was then read as the add's or
		// as a request of its own is unknown, so the connection is not
		// read further.
		return false, 0, false, errors.New(string(bytes.TrimSpace(line)))
	}
	if line, err = c.r.ReadSlice('\n'); err != nil {
		return false, 0, false, err
	}
	if n, err := strconv.ParseUint(string(bytes.TrimSuffix(line, []byte("\r\n"))), 10, 64); err == nil {
		return stored, n, true, nil
	}
	// NOT_FOUND (the counter is missing), or an error about it: the
	// caller draws the fence as without the pipe, which says why.
	return stored, 0, false, nil
}
