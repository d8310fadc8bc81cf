package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockkit/lock"
)

// The line of a resource is its scope: every key in it is a lock's key,
// under a lease of its own; the key of the lowest create revision holds
// the lock, and the others wait in the order of their create revisions.
// A queued acquisition puts its key whatever the scope holds, and holds
// the lock once no key of a lower create revision is left: as deleted
// keys never come back and new keys get higher revisions, that is for
// good, until its own key goes. Acquire puts a key only in an empty
// scope, so nobody passes a line. This is the line of etcd's
// concurrency.Mutex: a release hands the lock over by deleting its key,
// without another write.

var _ lock.Queuer = (*Store)(nil)

// waitLease is the longest lease, in whole seconds, of a key waiting in
// line: a waiter whose process dies, or is cut off from the cluster,
// holds the lock, once its turn comes, until its key's lease expires, for
// nobody. A queued acquisition of a longer TTL first tries as Acquire
// does, then waits under a lease of waitLease seconds (or the store's
// minimum TTL, if longer), and when handed the lock moves its key to a
// lease of its TTL (see queued.promote): a write more per handoff, only
// for such TTLs. A variable for the tests, read by New.
var waitLease int64 = 15

// errOutOfLine is the error of a queued acquisition whose key was deleted
// while it waited: its lease expired (its renewals failed), or a release
// by its token took it out of line. It wraps lock.ErrNotAcquired: the key
// never comes back, so the token does not hold the lock.
var errOutOfLine = fmt.Errorf("%w: etcd: the queued acquisition's key was deleted while it waited in line (its lease expired, or a release by its token took it out)", lock.ErrNotAcquired)

// AcquireQueued implements [lock.Queuer]. With a Wait of 0 or less it is
// Acquire (AcquireFenced if a.Fenced). Otherwise it puts the lock's key,
// under a lease of its own as Acquire does, whatever the resource's scope
// holds, in one transaction that also reads which key comes before it in
// the line: none, and it holds the lock at once, for the cost of an
// Acquire; else it calls a.Queued and waits, woken by the store's watch
// of the resource (one per resource and store, as for WaitRelease) when
// the key before it is deleted — released, or its lease expired — and
// then reads the line again, with a renewal of its lease sent along: the
// lock is handed to it, and its TTL counts from the renewal, if no key
// of a lower create revision is left. A handoff so costs the release's
// deletion, one read and one renewal. While it waits, its lease is
// renewed every third of the lease, so that a wait longer than the TTL
// keeps its place. The fence is the create revision of its key.
//
// A key waits under a lease of 15s at most (or of the cluster's shortest
// lease, if longer): a waiter whose process dies, or is cut off from the
// cluster, holds up the line, once its turn comes, until that lease
// expires. An acquisition whose lease is longer (its TTL rounded up to
// whole seconds, with the lease's slack) first tries as Acquire does,
// then waits under a lease of 15s, and when handed the lock moves its key
// to a lease of its TTL in one more transaction (with a keepalive of a
// kept lease, or a grant), which keeps its create revision, and so its
// fence; its TTL counts from that lease's grant or renewal.
//
// If a.Wait passes, it leaves the line — deletes its key unless it holds
// the lock by then, in one transaction — and returns lock.ErrNotAcquired,
// or the lock if it was handed to it meanwhile. If ctx ends, it deletes its
// key (the lock may have been handed to it: that is a release) and
// returns ctx's error. A key deleted while it waits (its lease expired,
// or a release by its token) puts it out of line: an error wrapping
// lock.ErrNotAcquired. If the watch ends (a member cut off from the
// cluster), it deletes its key and returns an error.
func (s *Store) AcquireQueued(ctx context.Context, a lock.QueuedAcquisition) (uint64, error) {
	fence, err := s.acquireQueued(ctx, a)
	if !a.Fenced {
		fence = 0
	}
	return fence, err
}

// acquireQueued is AcquireQueued, its fence returned whether a.Fenced or
// not: every key's create revision is its fence.
func (s *Store) acquireQueued(ctx context.Context, a lock.QueuedAcquisition) (uint64, error) {
	if a.Wait <= 0 {
		return s.acquire(ctx, a.Resource, a.Token, a.TTL)
	}
	secs, err := s.seconds(a.TTL)
	if err != nil {
		return 0, err
	}
	if err := check(ctx, a.Resource, a.Token); err != nil {
		return 0, err
	}
	q := &queued{s: s, scope: s.scope(a.Resource), key: s.key(a.Resource, a.Token), secs: secs, wsecs: secs, ttl: a.TTL, deadline: time.Now().Add(a.Wait)}
	if long := max(s.waitMax, s.minTTL.Load()); secs > long {
		// A key waits under a lease of long seconds at most (see
		// waitLease): try first as Acquire does, which puts the key under
		// a lease of the TTL if the resource is free and nobody waits.
		fence, err := s.acquire(ctx, a.Resource, a.Token, a.TTL)
		if !errors.Is(err, lock.ErrNotAcquired) {
			return fence, err
		}
		q.wsecs = long
	}
	defer q.leaveWatch()
	fence, err := q.run(ctx, a.Queued)
	if err == nil && q.wsecs < q.secs {
		err = q.promote(ctx)
	}
	if err == nil {
		s.pool.heads(q.l.id, q.key)
	}
	return fence, err
}

// queued is one AcquireQueued with a wait.
type queued struct {
	s        *Store
	scope    string
	key      string
	secs     int64 // of the lock's lease
	wsecs    int64 // of the lease of the key while it waits: secs, or less (see waitLease)
	ttl      time.Duration
	deadline time.Time
	l        lease     // the lease of the key, once put
	rev      int64     // the create revision of the key, once put: the fence
	w        *watch    // the watch it follows, if any
	f        *follower // its place among w's followers
}

// run puts the key and waits for its turn.
func (q *queued) run(ctx context.Context, queued func()) (uint64, error) {
	// A watch that runs already is followed before the key is put, so the
	// transaction's read tells what to wait for: no deletion after it is
	// missed.
	q.w, q.f = q.s.hub.join(q.scope, q.key)
	pred, after, err := q.put(ctx)
	if err != nil || pred == "" {
		return uint64(q.rev), err
	}
	if queued != nil {
		queued()
	}
	renewAt := q.l.expires.Add(-time.Duration(2*q.wsecs) * time.Second / 3)
	renewTimer := time.NewTimer(time.Until(renewAt))
	defer renewTimer.Stop()
	waitTimer := time.NewTimer(time.Until(q.deadline))
	defer waitTimer.Stop()
	woke := false // by the deletion of the key before it
	for {
		if q.w == nil {
			if q.w, q.f, err = q.s.hub.enter(ctx, q.scope, q.key); err != nil {
				return 0, q.takeOut(ctx, err)
			}
			pred = "" // read the line again, from a revision the watch covers
		}
		if pred == "" {
			var renewed bool
			var renewStart time.Time
			var last error
			pred, after, renewStart, renewed, last = q.look(ctx, woke)
			switch {
			case last != nil:
				return 0, last
			case pred == "":
				return uint64(q.rev), nil
			case renewed:
				renewTimer.Reset(time.Until(renewStart.Add(time.Duration(q.wsecs) * time.Second / 3)))
			}
			woke = false
		}
		if q.s.hub.arm(q.w, q.f, pred, after) {
			pred, woke = "", true // deleted already
			continue
		}
		select {
		case err := <-q.f.wake:
			if err != nil {
				q.w, q.f = nil, nil // ended: no longer in it
				return 0, q.takeOut(ctx, fmt.Errorf("etcd queued acquisition: %w", err))
			}
			pred, woke = "", true
		case <-renewTimer.C:
			// Keep the place: the lease must outlive the wait.
			switch err := q.renew(ctx); {
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				return 0, q.takeOut(ctx, errOutOfLine)
			case err != nil:
				renewTimer.Reset(time.Duration(q.wsecs) * time.Second / 9) // try again soon
			default:
				renewTimer.Reset(time.Duration(q.wsecs) * time.Second / 3)
			}
		case <-waitTimer.C:
			return q.leave(ctx)
		case <-ctx.Done():
			return 0, q.takeOut(ctx, ctx.Err())
		}
	}
}

// put puts the key, under a lease of its own, whatever the scope holds,
// and reads the key before it in the line at the same revision: pred is
// "" if there is none (it holds the lock), and after is the revision of
// that read. A key of the token's that exists already is not touched:
// lock.ErrNotAcquired.
func (q *queued) put(ctx context.Context) (pred string, after int64, err error) {
	ctx, cancel := q.s.bound(ctx)
	defer cancel()
	txn := func(l lease) clientv3.Txn {
		return q.s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(q.key), "=", 0)).
			Then(
				clientv3.OpPut(q.key, strconv.FormatInt(wholeSeconds(q.ttl), 10), clientv3.WithLease(clientv3.LeaseID(l.id))),
				clientv3.OpGet(q.scope, lastTwo()...),
			)
	}
	resp, l, err := q.s.putLeased(ctx, q.key, q.wsecs, q.leaseTTL(), txn)
	if errors.Is(err, lock.ErrInvalid) && q.wsecs < q.secs {
		// The cluster's shortest lease is longer than the waiting lease
		// (grant raised the store's minimum, and put nothing): the TTL
		// asked for is valid, so wait under a lease of that minimum.
		if m := q.s.minTTL.Load(); m > q.wsecs {
			q.wsecs = min(m, q.secs)
			resp, l, err = q.s.putLeased(ctx, q.key, q.wsecs, q.leaseTTL(), txn)
		}
	}
	if err != nil {
		return "", 0, err
	}
	q.l, q.rev = l, resp.Header.Revision
	pred, gone := q.before(resp.Responses[1].GetResponseRange().Kvs)
	if gone {
		// The transaction put the key it reads: only a broken cluster
		// answers that.
		return "", 0, fmt.Errorf("etcd queued acquisition: the transaction that put %q did not read it", q.key)
	}
	return pred, resp.Header.Revision, nil
}

// lastTwo are the options of a read of the last two keys of a scope by
// create revision, keys only: the newest key, and the one before it.
func lastTwo() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2), clientv3.WithKeysOnly()}
}

// before returns the key before q's in the line, given the last two keys
// by create revision up to q's: pred is "" if q's key is the head, and
// gone is true if q's key is not there.
func (q *queued) before(kvs []*mvccpb.KeyValue) (pred string, gone bool) {
	if len(kvs) == 0 || string(kvs[0].Key) != q.key || kvs[0].CreateRevision != q.rev {
		return "", true
	}
	if len(kvs) == 1 {
		return "", false
	}
	return string(kvs[1].Key), false
}

// look reads the line again: the key before q's, and the revision of the
// read. With renew, as q was woken by the deletion of the key before it
// and may hold the lock now, the lease is renewed along with the read, so
// that a lock handed over lives its TTL from the handoff. If q's key is
// the head, it returns pred "" once the lease is renewed — it holds the
// lock — and otherwise the error to return (last): q's key is gone, or the
// outcome is unknown, and q has left the line.
func (q *queued) look(ctx context.Context, renew bool) (pred string, after int64, renewStart time.Time, renewed bool, last error) {
	ctx, cancel := q.s.bound(ctx)
	defer cancel()
	var renewErr error
	var wg sync.WaitGroup
	renewStart = time.Now()
	if renew {
		wg.Go(func() { _, renewErr = q.s.renewer.renew(ctx, q.l.id) })
	}
	resp, err := q.s.client.Get(ctx, q.scope, append(lastTwo(), clientv3.WithMaxCreateRev(q.rev))...)
	wg.Wait()
	if err != nil {
		return "", 0, renewStart, false, q.takeOut(ctx, q.s.fail(ctx, "queued acquisition", err))
	}
	pred, gone := q.before(resp.Kvs)
	if gone {
		// Deleted: it never comes back.
		q.s.pool.forget(q.l.id, q.key)
		return "", 0, renewStart, false, errOutOfLine
	}
	if pred == "" && !renew {
		// The head without a wake (the key before it went while the
		// watch started): renew now, as the TTL counts from the handoff.
		renewStart = time.Now()
		renew, renewErr = true, q.renew(ctx)
	} else if renew && renewErr == nil {
		q.s.pool.renewed(q.l.id, q.wsecs, renewStart)
	}
	switch {
	case errors.Is(renewErr, rpctypes.ErrLeaseNotFound):
		// The key is going with its lease (or the leader does not know
		// the lease yet: the deletion makes sure).
		return "", 0, renewStart, false, q.takeOut(ctx, errOutOfLine)
	case renewErr != nil && pred == "":
		// Handed the lock, on a lease that may expire before its TTL:
		// revoking the lease deletes the key, and the next in line gets
		// the lock; if that fails, the caller releases by token.
		return "", 0, renewStart, false, q.undo(ctx, renewErr)
	}
	return pred, resp.Header.Revision, renewStart, renew && renewErr == nil, nil
}

// renew renews q's lease, within the store's timeout, and records it.
func (q *queued) renew(ctx context.Context) error {
	ctx, cancel := q.s.bound(ctx)
	defer cancel()
	start := time.Now()
	if _, err := q.s.renewer.renew(ctx, q.l.id); err != nil {
		return err
	}
	q.s.pool.renewed(q.l.id, q.wsecs, start)
	return nil
}

// leaseTTL is the TTL that the lease of q's key must outlive from its
// renewal: the lock's, or the wait's lease's whole seconds.
func (q *queued) leaseTTL() time.Duration {
	if q.wsecs < q.secs {
		return time.Duration(q.wsecs) * time.Second
	}
	return q.ttl
}

// promote moves q's key, handed the lock while it waited under a lease
// shorter than the lock's (see waitLease), to a lease of the lock's TTL,
// as an Extend with another TTL moves a lock: a transaction that checks
// that the key is still q's and on its lease. The key keeps its create
// revision, and so its place and its fence. The lock's TTL counts from
// the new lease's grant or renewal, after the handoff.
func (q *queued) promote(ctx context.Context) error {
	ctx, cancel := q.s.bound(ctx)
	defer cancel()
	old := q.l
	_, l, err := q.s.putLeased(ctx, q.key, q.secs, q.ttl, func(l lease) clientv3.Txn {
		return q.s.client.Txn(ctx).
			If(
				clientv3.Compare(clientv3.CreateRevision(q.key), "=", q.rev),
				clientv3.Compare(clientv3.LeaseValue(q.key), "=", old.id),
			).
			Then(clientv3.OpPut(q.key, strconv.FormatInt(wholeSeconds(q.ttl), 10), clientv3.WithLease(clientv3.LeaseID(l.id))))
	})
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		// The key is gone: it expired with the wait's lease.
		q.s.pool.forget(old.id, q.key)
		return errOutOfLine
	case err != nil:
		// The key may be on either lease (putLeased revoked the new
		// one): the caller releases by token.
		q.s.pool.forget(old.id, q.key)
		return err
	}
	q.l = l
	q.s.drop(ctx, old.id, q.key) // the wait's lease holds nothing now
	return nil
}

// undo revokes q's lease, and so deletes its key, which holds the lock
// on a lease whose renewal failed, err: its expiry is unknown. If that
// fails, the caller releases by token.
func (q *queued) undo(ctx context.Context, err error) error {
	q.s.pool.forget(q.l.id, q.key)
	q.s.undo(ctx, q.l.id)
	return q.s.fail(ctx, "queued acquisition: renew the lease", err)
}

// leave leaves the line as q's wait ran out: one transaction deletes q's
// key unless it holds the lock by then. A lock handed over is kept, its
// lease renewed (its TTL counts from the handoff); otherwise the answer is
// lock.ErrNotAcquired.
func (q *queued) leave(ctx context.Context) (uint64, error) {
	ctx, cancel := q.s.bound(ctx)
	defer cancel()
	resp, err := q.s.client.Txn(ctx).
		If(
			clientv3.Compare(clientv3.CreateRevision(q.key), "=", q.rev),
			// Every key in the scope is q's or newer: q's is the head.
			clientv3.Compare(clientv3.CreateRevision(q.scope), ">", q.rev-1).WithPrefix(),
		).
		Else(clientv3.OpDelete(q.key)).
		Commit()
	switch {
	case err != nil:
		q.s.pool.forget(q.l.id, q.key)
		return 0, q.s.fail(ctx, "queued acquisition: leave the line", err)
	case !resp.Succeeded:
		if resp.Responses[0].GetResponseDeleteRange().Deleted > 0 {
			q.s.drop(ctx, q.l.id, q.key) // the lease holds nothing now
		} else {
			q.s.pool.forget(q.l.id, q.key) // gone with its lease, or released by token
		}
		return 0, lock.ErrNotAcquired
	}
	// Handed the lock just before the wait ran out: its TTL counts from
	// now.
	switch err := q.renew(ctx); {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return 0, q.takeOut(ctx, errOutOfLine)
	case err != nil:
		return 0, q.undo(ctx, err)
	}
	return uint64(q.rev), nil
}

// takeOut deletes q's key, which may hold the lock by now, as q gives up
// with err, and returns err. The deletion runs on a context of its own,
// bounded by the store's timeout or undoTimeout, if ctx has ended. If it
// fails, the caller releases by token, or the key goes with its lease; a
// refusal (lock.ErrNotAcquired) then becomes the deletion's error.
func (q *queued) takeOut(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
		defer cancel()
	}
	ctx, cancel := q.s.bound(ctx)
	defer cancel()
	resp, derr := q.s.client.Delete(ctx, q.key)
	switch {
	case derr != nil:
		q.s.pool.forget(q.l.id, q.key)
		if errors.Is(err, lock.ErrNotAcquired) {
			// The key may still be there (a leader that did not know its
			// lease yet), in line or holding the lock: not a refusal, so
			// that the caller releases by token.
			return q.s.fail(ctx, "queued acquisition: leave the line", derr)
		}
	case resp.Deleted > 0:
		q.s.drop(ctx, q.l.id, q.key)
	default:
		q.s.pool.forget(q.l.id, q.key)
	}
	return err
}

// leaveWatch takes q out of the watch it follows, if any.
func (q *queued) leaveWatch() {
	if q.w != nil {
		q.s.hub.leave(q.w, q.f)
	}
}

// follower is a queued acquisition waiting in line, among the followers
// of its resource's watch: it is woken by the deletion of the key before
// it in the line (pred), or of its own, after the revision of the read
// that found pred there. Its fields other than wake are guarded by the
// hub's mutex.
type follower struct {
	wake  chan error // buffered (wakes): nil for a deletion, or why the watch ended
	own   string     // its key
	pred  string     // the key before it; "" while it reads the line
	after int64      // the revision of the read that found pred
	seen  []deletion // the deletions seen while pred is ""
}

// wakes is the capacity of a follower's wake: a deletion of the key
// before it and one of its own may both be waiting to be read (run arms
// the follower again, for the same key, after a renewal), and then the
// end of the watch, which end sends with the hub's mutex held.
const wakes = 3

// deletion is the deletion of key at revision rev.
type deletion struct {
	key string
	rev int64
}

// deleted tells f that key was deleted at revision rev. Called with the
// hub's mutex held.
func (f *follower) deleted(key string, rev int64) {
	if f.pred == "" {
		f.seen = append(f.seen, deletion{key, rev})
		return
	}
	if (key == f.pred || key == f.own) && rev > f.after {
		f.pred = ""
		f.wake <- nil
	}
}

// join makes the caller whose key is own a follower of the running watch
// of scope, if there is one, and returns it; or nil.
func (h *hub) join(scope, own string) (*watch, *follower) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.watches[scope]
	if w == nil || w.stop == nil || w.ended {
		return nil, nil // none, or not started yet
	}
	f := &follower{wake: make(chan error, wakes), own: own}
	w.followers = append(w.followers, f)
	return w, f
}

// enter makes the caller whose key is own a follower of the watch of
// scope, starting it if there is none.
func (h *hub) enter(ctx context.Context, scope, own string) (*watch, *follower, error) {
	for {
		w, _, err := h.open(ctx, scope)
		if err != nil {
			return nil, nil, err
		}
		h.mu.Lock()
		switch {
		case w.ended && w.err == errWatchIdle:
			h.mu.Unlock()
			continue // ended for want of callers just now: start another
		case w.ended:
			h.mu.Unlock()
			return nil, nil, w.err
		}
		f := &follower{wake: make(chan error, wakes), own: own}
		w.followers = append(w.followers, f)
		h.mu.Unlock()
		return w, f, nil
	}
}

// arm makes f wait for the deletion of pred, which a read at revision
// after found, or of its own key; it reports true, without waiting, if
// the watch has seen either deleted after that revision already.
func (h *hub) arm(w *watch, f *follower, pred string, after int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := f.seen
	f.seen = nil
	for _, d := range seen {
		if (d.key == pred || d.key == f.own) && d.rev > after {
			return true
		}
	}
	if !w.ended {
		f.pred, f.after = pred, after
	}
	return false
}

// leave takes f out of w's followers.
func (h *hub) leave(w *watch, f *follower) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, g := range w.followers {
		if g == f {
			w.followers = append(w.followers[:i], w.followers[i+1:]...)
			return
		}
	}
}
