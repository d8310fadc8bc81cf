package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockkit/lock"
)

// WaitRelease implements [lock.Waiter]. It listens for release
// notifications on a connection the store shares among all its waiting
// callers, then marks the lock as waited for (one UPDATE, which also
// reads the lock's remaining TTL and its holder): if the resource is free
// it returns nil at once; otherwise it blocks until the lock it found is
// released, the lock's TTL runs out (it then looks again, as the lock may
// have been extended), or ctx ends. Listening before marking means that
// no release of the lock it marked is missed. A lock that another Store
// takes meanwhile is not marked until a caller of this one looks again:
// until then its release wakes none of them, and they look again when
// the lock they marked would have expired.
//
// A release notifies only a lock that was marked, so releases nobody
// waits for cost nothing more. Each notification wakes one caller of each
// listening store, the one that has waited longest, which checks (one
// SELECT) that the lock it found is gone before it returns: a
// notification names a resource, not a lock, and may come from the
// release of an earlier lock, delivered after another owner took the
// resource, or from another table's lock of the same name (see Waiting
// in the package documentation). If the lock it found is still held, the
// caller waits on in its place and the wake goes to the next caller in
// line that found another lock. If the listening connection breaks,
// waiting callers get its error at once: the lockers then fall back to
// their retry delay. After [Store.Close], WaitRelease returns an error
// wrapping lock.ErrClosed.
func (s *Store) WaitRelease(ctx context.Context, resource string) error {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return err
	}
	ln, wl, err := s.wait.join(ctx, s, resource)
	if err != nil {
		return err
	}
	defer s.wait.leave(ln, resource)
	select {
	case <-ln.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !ln.listening.Load() {
		<-ln.done
		return ln.err
	}
	var expiry *time.Timer
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	// In line before marking, so that a release after the mark wakes
	// this caller; it keeps its place when it looks again, so that a
	// release wakes the caller that has waited longest.
	p := wl.join()
	for {
		o, err := s.run(ctx, &s.q.wait, args{resource: resource, n: 1})
		switch {
		case err != nil:
			wl.leave(p, true)
			return s.failed(ctx, err)
		case o.rows == 0: // free
			wl.leave(p, false)
			return nil
		}
		token := string(o.b)
		d := time.Duration(o.n) * time.Microsecond
		if expiry == nil {
			expiry = time.NewTimer(d)
		} else {
			expiry.Reset(d)
		}
		woken := wl.looked(p, token)
		for {
			if !woken {
				if woken, err = wl.block(ctx, p, ln, expiry.C); err != nil {
					return err
				}
				if !woken {
					break // expired, or extended meanwhile: look again
				}
			}
			// Woken by a notification of a release of the resource:
			// of the lock this caller found, or of another.
			wl.checking(p)
			h, err := s.run(ctx, &s.q.holder, args{resource: resource, n: 1})
			switch {
			case err != nil:
				wl.leave(p, true)
				return s.failed(ctx, err)
			case h.rows == 0 || string(h.b) != token:
				wl.leave(p, false)
				return nil
			}
			// Still held: the wake was of another lock. If another
			// notification came during the check, it may be of this
			// lock's release, after the check read it: check again.
			woken = wl.rearm(p, token)
		}
		wl.relook(p)
	}
}

// block waits, in line at p and with the lock marked, for a release, the
// end of the listener or of ctx, or expired. It reports whether a
// notification woke the caller, or the error to return; neither means
// look again.
func (wl *waitLine) block(ctx context.Context, p *place, ln *listener, expired <-chan time.Time) (bool, error) {
	wl.blocked.Add(1)
	defer wl.blocked.Add(-1)
	select {
	case <-wl.woken(p):
		return true, nil
	case <-ln.done:
		wl.leave(p, true)
		return false, ln.err
	case <-ctx.Done():
		wl.leave(p, true)
		return false, ctx.Err()
	case <-expired:
		// Expired, or extended meanwhile: look again, keeping the place
		// in line. A notification that wakes the caller meanwhile is
		// seen once the look is done.
		return false, nil
	}
}

// waitLine is the line of a store's callers waiting for one resource,
// longest waiting first. Each notification of a release of the resource
// wakes the first caller not woken yet; a caller that finds the lock it
// looked at still held (the notification was of another lock) hands the
// wake on to the first caller whose look found another lock, or is under
// way, and waits on in its place.
type waitLine struct {
	mu      sync.Mutex
	notes   uint64 // notifications dispatched to the line
	places  []*place
	refs    int          // callers using it; guarded by waiting.mu
	blocked atomic.Int32 // callers in line that have marked the lock (for tests)
}

// place is one caller's place in a waitLine; its fields are guarded by
// waitLine.mu.
type place struct {
	c       chan struct{} // closed when woken; a new one when woken in vain
	woken   bool
	looking bool   // a look at the lock is under way
	token   string // the holder found by the last look
	seen    uint64 // the line's notes when the caller last checked the holder
}

func (wl *waitLine) join() *place {
	p := &place{c: make(chan struct{}), looking: true}
	wl.mu.Lock()
	wl.places = append(wl.places, p)
	wl.mu.Unlock()
	return p
}

// looked records the holder a look found, and reports whether a
// notification woke the caller during the look.
func (wl *waitLine) looked(p *place, token string) bool {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	p.looking, p.token = false, token
	return p.woken
}

// relook records that the caller looks at the lock again.
func (wl *waitLine) relook(p *place) {
	wl.mu.Lock()
	p.looking = true
	wl.mu.Unlock()
}

// woken returns the channel closed when p is woken.
func (wl *waitLine) woken(p *place) <-chan struct{} {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return p.c
}

// checking records that p, woken, checks the lock's holder now.
func (wl *waitLine) checking(p *place) {
	wl.mu.Lock()
	p.seen = wl.notes
	wl.mu.Unlock()
}

// rearm hands the wake of p, woken by the release of a lock other than
// the one held under token (which it found still held), to the first
// caller that found another lock or is looking, and puts p back to
// waiting in its place — unless a notification came while p checked
// (which found every caller woken, p included, and woke none, if it was
// of this lock's release): then p stays woken, and rearm reports that it
// must check again.
func (wl *waitLine) rearm(p *place, token string) (again bool) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	wl.wakeLocked(func(q *place) bool { return q != p && (q.looking || q.token != token) })
	if wl.notes != p.seen {
		return true
	}
	p.woken, p.c = false, make(chan struct{})
	return false
}

// leave takes p out of the line. A caller woken but leaving without
// using the wake (it will not try to acquire: passOn) hands it to the
// next caller.
func (wl *waitLine) leave(p *place, passOn bool) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	for i, x := range wl.places {
		if x == p {
			wl.places = append(wl.places[:i], wl.places[i+1:]...)
			break
		}
	}
	if p.woken && passOn {
		wl.wakeLocked(nil)
	}
}

// wake wakes, for a notification, the caller that has waited longest
// and is not woken yet.
func (wl *waitLine) wake() {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	wl.notes++
	wl.wakeLocked(nil)
}

// wakeLocked wakes the first caller not woken yet that ok accepts (nil:
// any).
func (wl *waitLine) wakeLocked(ok func(*place) bool) {
	for _, q := range wl.places {
		if !q.woken && (ok == nil || ok(q)) {
			q.woken = true
			close(q.c)
			return
		}
	}
}

// waiting is a store's state for WaitRelease: the listening connection,
// while anyone waits, and the lines of waiting callers by resource.
type waiting struct {
	active atomic.Int32 // callers in WaitRelease, read without mu by hasWaiters
	mu     sync.Mutex
	closed bool // by Store.Close
	ln     *listener
	lines  map[string]*waitLine
}

// listener is one listening connection and its goroutine.
type listener struct {
	refs      int  // callers using it; guarded by waiting.mu
	idle      int  // times refs fell to 0; guarded by waiting.mu
	closing   bool // no longer to be joined; guarded by waiting.mu
	cancel    context.CancelFunc
	listening atomic.Bool
	readyOnce sync.Once
	ready     chan struct{} // closed once listening, or when done
	done      chan struct{} // closed when the goroutine has ended
	err       error         // why it ended, set before done is closed
}

// linger is how long the listening connection outlives its last caller:
// the lockers come back after each attempt.
const linger = time.Second

// listenTimeout bounds getting a connection and sending LISTEN.
const listenTimeout = 10 * time.Second

// errClosed is the error of WaitRelease on a closed store.
var errClosed = fmt.Errorf("postgres: store closed: %w", lock.ErrClosed)

// join returns the store's listener, starting one if none runs, and the
// line of resource. The caller must leave.
func (w *waiting) join(ctx context.Context, s *Store, resource string) (*listener, *waitLine, error) {
	w.mu.Lock()
	for w.ln != nil && w.ln.closing && !w.closed {
		done := w.ln.done
		w.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		w.mu.Lock()
	}
	if w.closed {
		w.mu.Unlock()
		return nil, nil, errClosed
	}
	if w.ln == nil {
		lctx, cancel := context.WithCancel(context.Background())
		w.ln = &listener{cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
		go w.run(lctx, s, w.ln)
	}
	ln := w.ln
	ln.refs++
	ln.idle++
	if w.lines == nil {
		w.lines = make(map[string]*waitLine)
	}
	wl := w.lines[resource]
	if wl == nil {
		wl = &waitLine{}
		w.lines[resource] = wl
	}
	wl.refs++
	w.active.Add(1)
	w.mu.Unlock()
	return ln, wl, nil
}

// leave ends a caller's use of ln and of resource's line. The listener
// stops linger after its last caller left, unless another came meanwhile.
func (w *waiting) leave(ln *listener, resource string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active.Add(-1)
	if wl := w.lines[resource]; wl != nil {
		if wl.refs--; wl.refs == 0 {
			delete(w.lines, resource)
		}
	}
	if ln.refs--; ln.refs > 0 || ln.closing {
		return
	}
	ln.idle++
	idle := ln.idle
	time.AfterFunc(linger, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if ln.refs == 0 && ln.idle == idle && !ln.closing {
			ln.closing = true
			ln.cancel()
		}
	})
}

// close stops the listener, if one runs, and waits for its end; joins
// fail from then on.
func (w *waiting) close() {
	w.mu.Lock()
	w.closed = true
	ln := w.ln
	if ln != nil {
		ln.closing = true
		ln.cancel()
	}
	w.mu.Unlock()
	if ln != nil {
		<-ln.done
	}
}

// hasWaiters reports whether callers of this store wait for resource: an
// acquisition then marks the lock as waited for, so that its release
// wakes them.
func (s *Store) hasWaiters(resource string) bool {
	w := &s.wait
	if w.active.Load() == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wl := w.lines[resource]
	return wl != nil && wl.refs > 0
}

// run listens until ctx ends or the connection fails, then marks ln
// ended.
func (w *waiting) run(ctx context.Context, s *Store, ln *listener) {
	err := w.listen(ctx, s, ln)
	w.mu.Lock()
	ln.closing = true
	if w.ln == ln {
		w.ln = nil
	}
	if w.closed {
		ln.err = errClosed
	} else {
		ln.err = fmt.Errorf("postgres: listening for releases: %w", err)
	}
	w.mu.Unlock()
	ln.cancel()
	ln.readyOnce.Do(func() { close(ln.ready) })
	close(ln.done)
}

func (w *waiting) listen(ctx context.Context, s *Store, ln *listener) error {
	sctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	conn, err := s.listenConn(sctx)
	if err != nil {
		return err
	}
	defer closeConn(conn)
	ln.listening.Store(true)
	ln.readyOnce.Do(func() { close(ln.ready) })
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		w.dispatch(n.Payload)
	}
}

// listenConn takes a connection out of the pool and sends LISTEN on it,
// on the channel of the table as the connection's server resolves it.
// A connection found dead — the pool kept it across a restart of the
// server — is closed and another one tried: neither statement changes
// anything but its session, so sending them again is safe.
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	for tries := int(s.pool.Config().MaxConns) + 1; ; tries-- {
		pc, err := s.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		conn := pc.Hijack() // the pool's connection settings, outside the pool
		var channel string
		if err = conn.QueryRow(ctx, "SELECT "+s.names.channel).Scan(&channel); err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err == nil {
				return conn, nil
			}
		}
		dead := conn.IsClosed()
		closeConn(conn)
		if !dead || tries <= 1 || ctx.Err() != nil {
			return nil, err
		}
	}
}

// closeConn closes a connection taken out of the pool.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// dispatch wakes the caller that has waited longest for the resource a
// notification names, if any.
func (w *waiting) dispatch(payload string) {
	resource, err := hex.DecodeString(payload)
	if err != nil {
		return
	}
	w.mu.Lock()
	wl := w.lines[string(resource)]
	w.mu.Unlock()
	if wl != nil {
		wl.wake()
	}
}
