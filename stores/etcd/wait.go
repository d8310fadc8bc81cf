package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// linger is how long a resource's watch outlives its last waiter, so that
// a locker that waits again after losing a race finds it running. A
// variable for the tests, read by New.
var linger = 2 * time.Second

// hub keeps one etcd watch per resource that callers of WaitRelease or
// AcquireQueued wait for, shared by all of them.
type hub struct {
	s       *Store
	linger  time.Duration
	mu      sync.Mutex
	watches map[string]*watch // by the resources' scopes
}

// watch follows the scope of one resource (its lock's scope, whichever
// holder's it is, and its line) for the callers waiting for its release
// (WaitRelease) or for their turn in line (AcquireQueued). Its fields
// other than ready are guarded by the hub's mutex.
type watch struct {
	ready     chan struct{} // closed once the scope was read and the watch started, or that failed (err)
	err       error         // why the watch failed to start or ended
	ended     bool          // no longer in the hub: waiters must not join
	keys      int64         // the keys in the scope at the last revision seen: the holder's and its line's
	rev       int64         // the revision the watch started after: that of the read that started it
	held0     bool          // whether a lock's key existed at rev
	deleted   int64         // the revision of the last release seen: the deletion of the scope's last key
	waiters   []*waiter     // in arrival order
	followers []*follower   // the queued acquisitions waiting in line (queue.go)
	stop      context.CancelFunc
	idle      *time.Timer // ends the watch when it finds no waiter (see expire)
}

// waiter is one caller of WaitRelease.
type waiter struct {
	wake  chan error // buffered: nil for a release, or why the watch ended
	after int64      // the revision of the read that found the resource held: older deletions do not wake it
	woke  int64      // the revision of the deletion that woke it (guarded by the hub's mutex)
}

var errWatchEnded = errors.New("etcd wait: the watch ended")

// errWatchIdle ends a watch that no caller waited on (its linger ran out,
// or Close ended it): a caller that found it before joining its line
// starts another.
var errWatchIdle = errors.New("etcd wait: the watch ended unused")

// opened, if not nil, is called by WaitRelease between finding the
// resource's watch and joining its line, and found, if not nil, between
// seeing the watch it found ready and reading its state: for the tests.
var opened, found func()

func (h *hub) init(s *Store) {
	h.s = s
	h.linger = linger
	h.watches = make(map[string]*watch)
}

// WaitRelease implements [lock.Waiter]. It returns nil at once if
// resource is free, and otherwise waits until the resource is free — its
// scope's last key is deleted (released, or its lease expired): the
// deletion of a holder's key that hands the lock to the next in line
// (see AcquireQueued) is not a release — or ctx ends. The callers waiting for
// one resource share one watch of its scope, which starts at the revision
// at which the scope was read, so no release after that read is missed; each release
// wakes one caller, the longest waiting (a caller that leaves passes a
// wake it received on to the next). Each caller reads the scope (the
// caller that starts the watch, with the read the watch starts from),
// and waits only if the read finds a key, for a deletion after it: a
// watch that has not yet seen a lock taken a moment ago does not make
// the call return while the resource is held. The watch requires a leader: on a
// member cut off from the cluster it ends, and the callers get an error.
func (s *Store) WaitRelease(ctx context.Context, resource string) error {
	if err := check(ctx, resource, "-"); err != nil {
		return err
	}
	h := &s.hub
	me := &waiter{wake: make(chan error, 1)}
	scope := s.scope(resource)
	var w *watch
	for w == nil {
		var mine bool
		var err error
		if w, mine, err = h.open(ctx, scope); err != nil {
			return err
		}
		// The watch's view of the scope may lag behind etcd: a lock taken
		// a moment ago may not have reached it yet. Only a read made
		// within this call tells whether the resource is held now.
		rev, held := w.rev, w.held0
		if !mine {
			var n int64
			if rev, n, err = s.count(ctx, scope); err != nil {
				return err
			}
			held = n > 0
		}
		if !held {
			return nil
		}
		if opened != nil {
			opened()
		}
		h.mu.Lock()
		switch {
		case w.ended && w.err == errWatchIdle:
			// Ended for want of callers just before this one joined,
			// which is no failure: start another, which reads the
			// resource afresh.
			w = nil
			h.mu.Unlock()
			continue
		case w.ended:
			h.mu.Unlock()
			return w.err
		case w.deleted > rev:
			// Released after the read, before this caller joined.
			h.mu.Unlock()
			return nil
		}
		me.after = rev
		w.waiters = append(w.waiters, me)
		h.mu.Unlock()
	}

	select {
	case err := <-me.wake:
		return err
	case <-ctx.Done():
	}
	h.mu.Lock()
	if i := slices.Index(w.waiters, me); i >= 0 {
		w.waiters = slices.Delete(w.waiters, i, i+1)
	} else if err := <-me.wake; err == nil {
		w.wakeOne(me.woke) // woken as ctx ended: the wake is the next waiter's
	}
	h.mu.Unlock()
	return ctx.Err()
}

// open returns the running watch of scope, starting it if there is none;
// mine reports whether this call started it, with a read made within
// the call (the watch's rev and held0).
func (h *hub) open(ctx context.Context, scope string) (_ *watch, mine bool, _ error) {
	for {
		h.mu.Lock()
		w := h.watches[scope]
		mine = w == nil
		if mine {
			w = &watch{ready: make(chan struct{})}
			h.watches[scope] = w
			h.mu.Unlock()
			h.start(ctx, scope, w)
		} else {
			h.mu.Unlock()
		}
		select {
		case <-w.ready:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		if found != nil {
			found()
		}
		h.mu.Lock()
		err := w.err
		h.mu.Unlock()
		// A watch that another caller failed to start because its own
		// context ended says nothing about this caller's, nor does one
		// that ended for want of callers since this one found it (its
		// linger ran out, or Close ended it idle): start again.
		if err == nil || !isContextErr(err) && err != errWatchIdle {
			return w, mine, err
		}
	}
}

// count reads, linearizably, how many keys exist in scope (the lock's
// and its line's), and the revision of that read; the store's timeout
// bounds it.
func (s *Store) count(ctx context.Context, scope string) (rev, n int64, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	resp, err := s.client.Get(ctx, scope, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, 0, s.fail(ctx, "wait", err)
	}
	return resp.Header.Revision, resp.Count, nil
}

// start counts the keys in scope, and watches the scope from the next
// revision.
func (h *hub) start(ctx context.Context, scope string, w *watch) {
	defer close(w.ready)
	rev, n, err := h.s.count(ctx, scope)
	if err != nil {
		h.mu.Lock()
		h.end(scope, w, err)
		h.mu.Unlock()
		return
	}
	wctx, stop := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	events := h.s.client.Watch(wctx, scope, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	h.mu.Lock()
	w.keys, w.rev, w.held0 = n, rev, n > 0
	w.stop = stop
	w.idle = time.AfterFunc(h.linger, func() { h.expire(scope, w) })
	h.mu.Unlock()
	go h.follow(scope, w, events)
}

// follow applies the events of w's scope until the watch ends: a key
// created adds to the scope's keys, and a deletion takes one away, waking
// the queued acquisitions that wait for that key to go; the deletion of
// the last one frees the resource, and wakes a caller of WaitRelease.
// The count is exact: the watch starts at the revision after the one at
// which the keys were counted.
func (h *hub) follow(scope string, w *watch, events clientv3.WatchChan) {
	err := errWatchEnded
	for resp := range events {
		if resp.Err() != nil {
			err = fmt.Errorf("%w: %w", errWatchEnded, resp.Err())
			continue // the channel closes next
		}
		h.mu.Lock()
		for _, ev := range resp.Events {
			switch {
			case ev.Type == mvccpb.DELETE:
				w.keys--
				for _, f := range w.followers {
					f.deleted(string(ev.Kv.Key), ev.Kv.ModRevision)
				}
				if w.keys <= 0 {
					w.keys = 0
					w.deleted = ev.Kv.ModRevision
					w.wakeOne(ev.Kv.ModRevision)
				}
			case ev.IsCreate():
				w.keys++
			}
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	h.end(scope, w, err)
	h.mu.Unlock()
}

// held reports whether the hub watches scope (callers of the store wait
// for its resource, or did a moment ago) and the last it saw was a key in
// it.
func (h *hub) held(scope string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.watches[scope]
	return w != nil && w.keys > 0
}

// busy reports whether a caller waits on w. Called with the hub's mutex
// held.
func (w *watch) busy() bool { return len(w.waiters) > 0 || len(w.followers) > 0 }

// expire ends w if it has no waiter, and otherwise looks again after
// h.linger: a watch ends between one and two lingers after its last
// waiter left.
func (h *hub) expire(scope string, w *watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.busy() {
		w.idle.Reset(h.linger)
		return
	}
	h.end(scope, w, errWatchIdle)
}

// closeIdle ends the watches that no caller waits on, rather than leave
// them running until their linger runs out: for Close.
func (h *hub) closeIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for scope, w := range h.watches {
		if !w.busy() && w.stop != nil {
			h.end(scope, w, errWatchIdle)
		}
	}
}

// end removes w from the hub, stops its watch and tells its waiters why.
// Called with the mutex held; a second call does nothing.
func (h *hub) end(scope string, w *watch, err error) {
	if w.ended {
		return
	}
	w.ended, w.err = true, err
	if h.watches[scope] == w {
		delete(h.watches, scope)
	}
	if w.stop != nil {
		w.stop()
		w.idle.Stop()
	}
	for _, wt := range w.waiters {
		wt.wake <- err
	}
	w.waiters = nil
	for _, f := range w.followers {
		f.wake <- err
	}
	w.followers = nil
}

// wakeOne wakes, for the deletion at revision rev, the longest-waiting
// caller that found the resource held before rev, if any: a caller whose
// read came after that deletion waits for the next. Called with the hub's
// mutex held.
func (w *watch) wakeOne(rev int64) {
	for i, wt := range w.waiters {
		if wt.after < rev {
			wt.woke = rev
			wt.wake <- nil
			w.waiters = slices.Delete(w.waiters, i, i+1)
			return
		}
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
