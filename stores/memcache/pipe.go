package memcache

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"
)

// The store's own connections (WithServer). memcached runs the requests
// of one connection in order, so an add and an incr of the fence counter
// sent together on one connection draw the fence once the add has taken
// the lock — as the two round trips of a fenced acquisition do — in the
// add's own round trip. gomemcache sends one request at a time, so the
// store keeps connections of its own to the server named with WithServer,
// for its acquisitions and for releases by CAS id (casrelease.go); every
// other request goes through the client. An add that is refused still
// runs its incr: the counter only grows, and fences need not be
// consecutive.
//
// On memcached 1.6.18 or later the add is sent as a meta set in add mode
// that returns the item's CAS id ("ms <key> <size> T<exp> ME c"), which
// lets the store release the lock with one meta delete by that id. A
// connection learns, when it is dialed, which run of the server it
// reached (the pid and start time that stats reports, and a mark it
// leaves on the run: see runMark) and whether that run takes meta
// commands: CAS ids are unique within one run only.

// pipe is the store's pool of connections to its server.
type pipe struct {
	network, addr string
	client        *gomemcache.Client // its Timeout, MaxIdleConns and DialContext apply
	runKey        string             // the key of the run's mark (see runMark)
	runSeen       func(*serverRun)   // if set, called with the run each new connection reached: for the tests

	mu   sync.Mutex
	idle []*pipeConn
}

type pipeConn struct {
	nc     net.Conn
	r      *bufio.Reader
	buf    []byte    // the requests, written in one call
	server serverRun // the run of the server it reached
}

// serverRun identifies one run of a memcached process; the zero value is
// a run the store could not identify, whose CAS ids it does not use.
type serverRun struct {
	pid, started int64
	meta         bool   // it takes the meta commands the store sends
	mark         string // the run's mark (see runMark)
}

// known reports whether the run was identified, and takes the meta
// commands: only then are CAS ids recorded and used.
func (r serverRun) known() bool { return r.meta && r.pid != 0 && r.mark != "" }

// runKeySuffix follows the store's prefix in the key of the run's mark.
// No resource maps to it, as to the fence counter's (see fenceKeySuffix).
const runKeySuffix = "#run"

// newPipe returns the pipe to addr, resolved once, now, as gomemcache's
// ServerList resolves the client's servers when it is made: the pipe then
// dials what the client dials, even if the name is later made to point
// elsewhere, or points to several addresses (a pipe that resolved it
// anew at each dial could take locks on a server the client does not
// release them on).
func newPipe(addr string, client *gomemcache.Client, runKey string) (*pipe, error) {
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
	return &pipe{network: resolved.Network(), addr: resolved.String(), client: client, runKey: runKey}, nil
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
	c := &pipeConn{nc: nc, r: bufio.NewReader(nc)}
	if c.server, err = c.stats(p.timeout()); err == nil && c.server.meta && c.server.pid != 0 {
		c.server.mark, err = c.runMark(p.runKey, p.timeout())
	}
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	if p.runSeen != nil {
		p.runSeen(&c.server)
	}
	return c, nil
}

// runMark returns the mark of the server's run: a random value that the
// first connection to reach the run adds under key, with no expiry, and
// every connection reads back. The pid and start second that stats
// reports do not tell two runs apart when memcached restarts within a
// second with the same pid, as it does in a container (pid 1); a restart
// loses the mark. An eviction or a flush_all loses it too, and a new
// mark makes the store take the run for another: it then releases the
// locks taken before by token, which costs more and is as safe. An
// answer other than the mark leaves the run unknown ("").
func (c *pipeConn) runMark(key string, timeout time.Duration) (string, error) {
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	mark := hex.EncodeToString(raw[:])
	b := append(c.buf[:0], "add "...)
	b = append(b, key...)
	b = append(b, " 0 0 "...)
	b = strconv.AppendInt(b, int64(len(mark)), 10)
	b = append(b, "\r\n"...)
	b = append(b, mark...)
	b = append(b, "\r\nget "...)
	b = append(b, key...)
	b = append(b, "\r\n"...)
	c.buf = b
	if _, err := c.nc.Write(b); err != nil {
		return "", err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return "", err
	}
	if !bytes.Equal(line, []byte("STORED\r\n")) && !bytes.Equal(line, []byte("NOT_STORED\r\n")) {
		return "", errors.New(string(bytes.TrimSpace(line))) // the stream's state is unknown
	}
	if line, err = c.r.ReadSlice('\n'); err != nil {
		return "", err
	}
	if bytes.Equal(line, []byte("END\r\n")) {
		return "", nil // evicted at once: unknown
	}
	if !bytes.HasPrefix(line, []byte("VALUE ")) {
		return "", errors.New(string(bytes.TrimSpace(line)))
	}
	value, err := c.r.ReadSlice('\n')
	if err != nil {
		return "", err
	}
	got := string(bytes.TrimSuffix(value, []byte("\r\n")))
	if line, err = c.r.ReadSlice('\n'); err != nil {
		return "", err
	}
	if !bytes.Equal(line, []byte("END\r\n")) {
		return "", errors.New(string(bytes.TrimSpace(line)))
	}
	return got, nil
}

// stats asks the server which run it is, and whether it takes meta
// commands (version 1.6.18, the oldest the store is tested with, or
// later). A server that refuses stats (a proxy, say) is an unknown run.
func (c *pipeConn) stats(timeout time.Duration) (serverRun, error) {
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return serverRun{}, err
	}
	if _, err := c.nc.Write([]byte("stats\r\n")); err != nil {
		return serverRun{}, err
	}
	var run serverRun
	var now, uptime int64
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return serverRun{}, err
		}
		head, stat, _ := strings.Cut(strings.TrimSuffix(string(line), "\r\n"), " ")
		if head == "END" {
			break
		}
		if head != "STAT" {
			return serverRun{}, nil // one line of error: the answer ends there
		}
		name, value, ok := strings.Cut(stat, " ")
		if !ok {
			continue
		}
		switch name {
		case "pid":
			run.pid, _ = strconv.ParseInt(value, 10, 64)
		case "time":
			now, _ = strconv.ParseInt(value, 10, 64)
		case "uptime":
			uptime, _ = strconv.ParseInt(value, 10, 64)
		case "version":
			run.meta = metaVersion(value)
		}
	}
	run.started = now - uptime
	return run, nil
}

// metaVersion reports whether a memcached of version v ("1.6.18") takes
// the meta commands the store sends.
func metaVersion(v string) bool {
	var n [3]int
	for i, part := range strings.SplitN(v, ".", 3) {
		digits := part
		if j := strings.IndexFunc(part, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			digits = part[:j]
		}
		n[i], _ = strconv.Atoi(digits)
	}
	return n[0] > 1 || n[0] == 1 && (n[1] > 6 || n[1] == 6 && n[2] >= 18)
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

// added is what the store's own add of a lock said.
type added struct {
	stored bool
	fence  uint64 // the counter's new value, if drawn
	drawn  bool   // the fence was drawn: not if the counter is missing
	cas    uint64 // the item's CAS id, if stored by a meta set
	server serverRun
}

// add sends an add of key with value and exp and, unless counter is "",
// an "incr counter 1", together. A failure (err) leaves the add's outcome
// unknown, unless a.stored says that the add took the key.
func (p *pipe) add(key string, value []byte, exp int32, counter string) (a added, err error) {
	c, err := p.conn()
	if err != nil {
		return added{}, err
	}
	a, err = c.add(key, value, exp, counter, p.timeout())
	if err != nil {
		_ = c.nc.Close() // what is left to read on it is unknown
		return a, err
	}
	p.reuse(c)
	return a, nil
}

func (c *pipeConn) add(key string, value []byte, exp int32, counter string, timeout time.Duration) (a added, err error) {
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return added{}, err
	}
	meta := c.server.known()
	var b []byte
	if meta {
		b = append(c.buf[:0], "ms "...)
		b = append(b, key...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(value)), 10)
		b = append(b, " T"...)
		b = strconv.AppendInt(b, int64(exp), 10)
		b = append(b, " ME c\r\n"...)
	} else {
		b = append(c.buf[:0], "add "...)
		b = append(b, key...)
		b = append(b, " 0 "...)
		b = strconv.AppendInt(b, int64(exp), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(value)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, value...)
	b = append(b, "\r\n"...)
	if counter != "" {
		b = append(b, "incr "...)
		b = append(b, counter...)
		b = append(b, " 1\r\n"...)
	}
	c.buf = b
	if _, err := c.nc.Write(b); err != nil {
		return added{}, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return added{}, err
	}
	switch {
	case meta && bytes.HasPrefix(line, []byte("HD ")):
		a.stored = true
		a.cas = casOf(line)
		a.server = c.server
	case meta && bytes.HasPrefix(line, []byte("NS ")):
	case !meta && bytes.Equal(line, []byte("STORED\r\n")):
		a.stored = true
	case !meta && bytes.Equal(line, []byte("NOT_STORED\r\n")):
	default:
		// An error line: whether the value was then read as the add's or
		// as a request of its own is unknown, so the connection is not
		// read further.
		return added{}, errors.New(string(bytes.TrimSpace(line)))
	}
	if counter == "" {
		return a, nil
	}
	if line, err = c.r.ReadSlice('\n'); err != nil {
		return a, err // a.stored stands: the add's answer was read
	}
	if n, err := strconv.ParseUint(string(bytes.TrimSuffix(line, []byte("\r\n"))), 10, 64); err == nil {
		a.fence, a.drawn = n, true
	}
	// Otherwise NOT_FOUND (the counter is missing), or an error about it:
	// the caller draws the fence as without the pipe, which says why.
	return a, nil
}

// casOf returns the CAS id among the flags of a meta answer ("HD c123"),
// or 0.
func casOf(line []byte) uint64 {
	i := bytes.Index(line, []byte(" c"))
	if i < 0 {
		return 0
	}
	var cas uint64
	for _, d := range line[i+2:] {
		if d < '0' || d > '9' {
			break
		}
		cas = cas*10 + uint64(d-'0')
	}
	return cas
}

// The answers of a meta delete by CAS id.
const (
	deleted  = iota // HD: memcached deleted the key
	notFound        // NF: no such key
	changed         // EX: the key holds another CAS id
)

// deleteCAS sends "md key C<cas>": memcached deletes key only if its CAS
// id is cas. It returns deleted, notFound or changed; err leaves the
// outcome unknown.
func (c *pipeConn) deleteCAS(key string, cas uint64, timeout time.Duration) (int, error) {
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	b := append(c.buf[:0], "md "...)
	b = append(b, key...)
	b = append(b, " C"...)
	b = strconv.AppendUint(b, cas, 10)
	b = append(b, "\r\n"...)
	c.buf = b
	if _, err := c.nc.Write(b); err != nil {
		return 0, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	switch {
	case bytes.Equal(line, []byte("HD\r\n")):
		return deleted, nil
	case bytes.Equal(line, []byte("NF\r\n")):
		return notFound, nil
	case bytes.Equal(line, []byte("EX\r\n")):
		return changed, nil
	default:
		return 0, errors.New(string(bytes.TrimSpace(line)))
	}
}
