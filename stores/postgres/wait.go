package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockkit/lock/internal/waitline"
)

// WaitRelease implements [lock.Waiter]. It listens for release
// notifications on a connection the store shares among all its waiting
// callers, then marks the lock as waited for (one UPDATE, which also
// reads the lock's remaining TTL): if the resource is free it returns nil
// at once; otherwise it blocks until a release of the resource is
// notified, the lock's TTL runs out (it then looks again, as the lock may
// have been extended), or ctx ends. Listening before marking means that
// no release of the lock it marked is missed. A lock that another Store
// takes meanwhile is not marked until a caller of this one looks again:
// until then its release wakes none of them, and they look again when
// the lock they marked would have expired.
//
// A release notifies only a lock that was marked, so releases nobody
// waits for cost nothing more. Each notification wakes one caller of each
// listening store, the one that has waited longest; see Waiting in the
// package documentation. If the listening connection breaks, waiting
// callers get its error at once: the lockers then fall back to their
// retry delay.
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
	p := wl.line.Join(false)
	for {
		o, err := s.run(ctx, &s.q.wait, args{resource: resource, n: 1})
		switch {
		case err != nil:
			wl.line.Leave(p, true, nil)
			return s.failed(ctx, err)
		case o.rows == 0: // free
			wl.line.Leave(p, false, nil)
			return nil
		}
		d := time.Duration(o.n) * time.Microsecond
		if expiry == nil {
			expiry = time.NewTimer(d)
		} else {
			expiry.Reset(d)
		}
		if woken, err := wl.block(ctx, p, ln, expiry.C); woken || err != nil {
			return err
		}
	}
}

// block waits, in line at p and with the lock marked, for a release, the
// end of the listener or of ctx, or expired. It reports whether a release
// woke the caller, or the error to return; neither means look again.
func (wl *waitLine) block(ctx context.Context, p *waitline.Place, ln *listener, expired <-chan time.Time) (bool, error) {
	wl.blocked.Add(1)
	defer wl.blocked.Add(-1)
	select {
	case <-p.C:
		return true, nil
	case <-ln.done:
		wl.line.Leave(p, true, nil)
		return false, ln.err
	case <-ctx.Done():
		wl.line.Leave(p, true, nil)
		return false, ctx.Err()
	case <-expired:
		// Expired, or extended meanwhile: look again, keeping the place
		// in line. A release that wakes the caller meanwhile closes p.C,
		// which the next block sees at once.
		return false, nil
	}
}

// waiting is a store's state for WaitRelease: the listening connection,
// while anyone waits, and the lines of waiting callers by resource.
type waiting struct {
	active atomic.Int32 // callers in WaitRelease, read without mu by hasWaiters
	mu     sync.Mutex
	ln     *listener
	lines  map[string]*waitLine
}

// waitLine is the line of a store's callers waiting for one resource.
type waitLine struct {
	line    waitline.Line
	refs    int          // callers using it; guarded by waiting.mu
	blocked atomic.Int32 // callers in line that have marked the lock (for tests)
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

// join returns the store's listener, starting one if none runs, and the
// line of resource. The caller must leave.
func (w *waiting) join(ctx context.Context, s *Store, resource string) (*listener, *waitLine, error) {
	w.mu.Lock()
	for w.ln != nil && w.ln.closing {
		done := w.ln.done
		w.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		w.mu.Lock()
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
	if ln.refs--; ln.refs > 0 {
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
	ln.err = fmt.Errorf("postgres: listening for releases: %w", err)
	w.mu.Unlock()
	ln.cancel()
	close(ln.done)
	ln.readyOnce.Do(func() { close(ln.ready) })
}

func (w *waiting) listen(ctx context.Context, s *Store, ln *listener) error {
	sctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	pc, err := s.pool.Acquire(sctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // the pool's connection settings, outside the pool
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(sctx, "LISTEN "+pgx.Identifier{s.names.channel}.Sanitize()); err != nil {
		return err
	}
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
		wl.line.WakeOne(nil)
	}
}
