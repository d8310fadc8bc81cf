package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Direction is a direction of traffic through the proxy, or both.
type Direction uint8

// The directions.
const (
	ToServer Direction = 1 << iota // requests: client to server
	ToClient                       // replies: server to client
	Both     = ToServer | ToClient
)

// index returns the mode slot of a single direction.
func (d Direction) index() int {
	if d == ToClient {
		return 1
	}
	return 0
}

type kind uint8

const (
	kindPass kind = iota
	kindDelay
	kindHold
	kindDrop
)

// Mode is what the proxy does with the traffic of one direction.
// Make one with [Pass], [Delay], [Hold] or [Drop]; the zero Mode passes.
type Mode struct {
	kind            kind
	latency, jitter time.Duration
}

// Pass forwards traffic at once.
func Pass() Mode { return Mode{} }

// Delay forwards each chunk of traffic latency ± jitter (drawn uniformly,
// never below zero) after the proxy read it. Chunks keep their order.
func Delay(latency, jitter time.Duration) Mode {
	return Mode{kind: kindDelay, latency: max(latency, 0), jitter: max(jitter, 0)}
}

// Hold forwards nothing and keeps connections open, as a network partition
// does; what is sent meanwhile is delivered, in order, once the direction
// stops holding.
func Hold() Mode { return Mode{kind: kindHold} }

// Drop discards traffic. A connection that lost bytes is reset as soon as
// its direction stops dropping.
func Drop() Mode { return Mode{kind: kindDrop} }

// String describes the mode: "pass", "delay 10ms±2ms", "hold", "drop".
func (m Mode) String() string {
	switch m.kind {
	case kindDelay:
		return fmt.Sprintf("delay %v±%v", m.latency, m.jitter)
	case kindHold:
		return "hold"
	case kindDrop:
		return "drop"
	}
	return "pass"
}

// Proxy forwards loopback TCP connections to a target address, injecting
// faults. Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	dialer net.Dialer
	ctx    context.Context // canceled by Close, ends pending dials
	cancel context.CancelFunc

	mu      sync.Mutex
	modes   [2]Mode       // by Direction.index
	changed chan struct{} // closed and replaced whenever modes change
	refuse  bool
	closed  bool
	dropped [2]int // data chunks dropped, by Direction.index
	links   map[*link]struct{}

	wg sync.WaitGroup // every goroutine of the proxy
}

// New starts a proxy listening on a free port of 127.0.0.1 that forwards
// every connection to target (host:port), passing traffic both ways.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listening: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:  target,
		ln:      ln,
		dialer:  net.Dialer{Timeout: 5 * time.Second},
		ctx:     ctx,
		cancel:  cancel,
		changed: make(chan struct{}),
		links:   make(map[*link]struct{}),
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients connect to: "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set sets the mode of the given direction(s), for open and new
// connections alike. Leaving [Drop] resets the connections that lost bytes
// in that direction.
func (p *Proxy) Set(dir Direction, m Mode) {
	p.mu.Lock()
	for _, d := range []Direction{ToServer, ToClient} {
		if dir&d != 0 {
			p.modes[d.index()] = m
		}
	}
	close(p.changed)
	p.changed = make(chan struct{})
	var corrupt []*link
	for l := range p.links {
		for i := range p.modes {
			if l.lost[i] && p.modes[i].kind != kindDrop {
				corrupt = append(corrupt, l)
				break
			}
		}
	}
	p.mu.Unlock()
	for _, l := range corrupt {
		l.abort(true)
	}
}

// Mode returns the current mode of one direction (ToServer or ToClient).
func (p *Proxy) Mode(dir Direction) Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.modes[dir.index()]
}

// Refuse makes the proxy reset every new connection as soon as it accepts
// it (on), or forward new connections again (off). Open connections are
// not affected; see [Proxy.Reset].
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Reset resets every open connection: both its client and its server side
// are closed with an RST, so both peers see "connection reset".
func (p *Proxy) Reset() {
	for _, l := range p.snapshot() {
		l.abort(true)
	}
}

// Heal passes traffic both ways again and stops refusing connections.
func (p *Proxy) Heal() {
	p.Set(Both, Pass())
	p.Refuse(false)
}

// Dropped returns the number of reads from one direction's sender (ToServer
// or ToClient) that the proxy has dropped so far. A test that must know a
// reply was lost, not merely that the server applied its command, waits
// for it to grow.
func (p *Proxy) Dropped(dir Direction) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped[dir.index()]
}

// Conns returns the number of open connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, resets every open connection and waits until every
// goroutine of the proxy has ended. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) snapshot() []*link {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*link, 0, len(p.links))
	for l := range p.links {
		out = append(out, l)
	}
	return out
}

// latency draws the delay of a chunk read now in direction d.
func (p *Proxy) latency(d Direction) time.Duration {
	p.mu.Lock()
	m := p.modes[d.index()]
	p.mu.Unlock()
	if m.kind != kindDelay {
		return 0
	}
	lat := m.latency
	if m.jitter > 0 {
		lat += time.Duration(rand.Int64N(int64(2*m.jitter)+1)) - m.jitter
	}
	return max(lat, 0)
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond) // e.g. out of file descriptors
			continue
		}
		client := c.(*net.TCPConn)
		p.mu.Lock()
		if p.closed || p.refuse {
			p.mu.Unlock()
			reset(client)
			continue
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.connect(client)
	}
}

// connect dials the target for a new client connection and starts
// forwarding.
func (p *Proxy) connect(client *net.TCPConn) {
	defer p.wg.Done()
	c, err := p.dialer.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		reset(client)
		return
	}
	server := c.(*net.TCPConn)
	l := &link{p: p, client: client, server: server, done: make(chan struct{})}
	l.open.Store(2)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		reset(client)
		reset(server)
		return
	}
	p.links[l] = struct{}{}
	p.wg.Add(4)
	p.mu.Unlock()
	up, down := make(chan chunk, 64), make(chan chunk, 64)
	go l.read(client, up, ToServer)
	go l.write(server, up, ToServer)
	go l.read(server, down, ToClient)
	go l.write(client, down, ToClient)
}

// reset closes c with an RST.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

// link is one proxied connection: a reader and a writer goroutine per
// direction, joined by a channel of chunks.
type link struct {
	p              *Proxy
	client, server *net.TCPConn
	done           chan struct{} // closed when the link is torn down
	once           sync.Once
	open           atomic.Int32 // writers still running
	lost           [2]bool      // bytes dropped, by Direction.index; guarded by p.mu
}

type chunk struct {
	data []byte
	due  time.Time
	eof  bool // the source closed its side
}

// read reads src and queues what it reads, stamped with its due time.
func (l *link) read(src *net.TCPConn, ch chan<- chunk, d Direction) {
	defer l.p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			c := chunk{data: bytes.Clone(buf[:n]), due: time.Now().Add(l.p.latency(d))}
			select {
			case ch <- c:
			case <-l.done:
				return
			}
		}
		if errors.Is(err, io.EOF) {
			select {
			case ch <- chunk{eof: true}:
			case <-l.done:
			}
			return
		}
		if err != nil {
			l.abort(true) // pass a reset on to the other peer
			return
		}
	}
}

// write delivers queued chunks to dst as the direction's mode says.
func (l *link) write(dst *net.TCPConn, ch <-chan chunk, d Direction) {
	defer l.p.wg.Done()
	defer func() {
		if l.open.Add(-1) == 0 { // both sides closed cleanly
			l.abort(false)
		}
	}()
	for {
		var c chunk
		select {
		case c = <-ch:
		case <-l.done:
			return
		}
		m, ok := l.await(d, !c.eof)
		if !ok {
			return
		}
		if c.eof {
			_ = dst.CloseWrite()
			return
		}
		if m.kind == kindDrop {
			continue
		}
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.done:
				t.Stop()
				return
			}
		}
		if _, err := dst.Write(c.data); err != nil {
			l.abort(true)
			return
		}
	}
}

// await waits while direction d holds, and returns the mode the next chunk
// (data, or the end of the stream) is delivered under; a dropped data chunk
// is marked lost at once, under the same lock as the mode it was read
// with. A link that lost bytes in d and no longer drops is reset instead
// (ok false), so that no byte follows a gap in the stream.
func (l *link) await(d Direction, data bool) (m Mode, ok bool) {
	i := d.index()
	for {
		l.p.mu.Lock()
		m, changed, lost := l.p.modes[i], l.p.changed, l.lost[i]
		if m.kind == kindDrop && data {
			l.lost[i] = true
			l.p.dropped[i]++
		}
		l.p.mu.Unlock()
		switch {
		case lost && m.kind != kindDrop:
			l.abort(true)
			return m, false
		case m.kind != kindHold:
			return m, true
		}
		select {
		case <-changed:
		case <-l.done:
			return m, false
		}
	}
}

// abort tears the link down, with an RST on both sides if rst is set.
func (l *link) abort(rst bool) {
	l.once.Do(func() {
		if rst {
			reset(l.client)
			reset(l.server)
		} else {
			_ = l.client.Close()
			_ = l.server.Close()
		}
		close(l.done)
		l.p.mu.Lock()
		delete(l.p.links, l)
		l.p.mu.Unlock()
	})
}
