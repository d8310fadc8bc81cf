package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock/internal/waitline"
)

// hub holds the subscriptions of every Store in the process, so that
// stores sharing a client share subscriptions too (two subscriptions to
// one channel on one connection would end each other).
var hub = subscriptions{topics: make(map[topicKey]*topic)}

// takeWoken reports whether a caller woken by a release comes back
// without having acquired the lock, and counts it as back.
func (t *topic) takeWoken() bool {
	for {
		n := t.woken.Load()
		if n <= 0 {
			return false
		}
		if t.woken.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// acquired tells the subscription to releases of the lock at key through
// s, if there is one, that s acquired the lock: a caller it woke has used
// its turn.
func (h *subscriptions) acquired(s *Store, key string) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	t := h.topics[topicKey{s.subOwner, key}]
	h.mu.Unlock()
	if t != nil {
		t.takeWoken()
	}
}

// woken returns the id of the subscription to releases of the lock at
// key through s if a release woke one of its callers that has not
// acquired the lock since, and "" otherwise.
func (h *subscriptions) woken(s *Store, key string) string {
	if h.n.Load() == 0 {
		return ""
	}
	h.mu.Lock()
	t := h.topics[topicKey{s.subOwner, key}]
	h.mu.Unlock()
	if t == nil || t.woken.Load() <= 0 {
		return ""
	}
	return t.id
}

// Subscriptions returns the number of subscriptions to releases the
// process holds, for tests checking that none is left behind.
func Subscriptions() int {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	return len(hub.topics)
}

// subscriptions shares one subscription per client and lock among the
// callers waiting on it.
type subscriptions struct {
	n      atomic.Int32 // topics: the common case, none, costs one load
	mu     sync.Mutex
	topics map[topicKey]*topic
}

type topicKey struct {
	owner any    // the client, or the store when the client is not comparable
	lock  string // the lock key
}

// topic is one subscription and its waiters.
type topic struct {
	store   *Store // the store that made it: whose client runs it
	key     topicKey
	id      string  // names the subscription in the waiters' queue
	channel string  // the subscription's own shard channel: see ChannelOf
	pass    *Script // hands a wake on: see waitFor
	refs    int     // callers using it; guarded by subscriptions.mu
	idle    int     // times refs fell to 0; guarded by subscriptions.mu
	closing bool    // no longer to be joined; guarded by subscriptions.mu
	cancel  context.CancelFunc

	subscribed  atomic.Bool
	readyOnce   sync.Once
	ready       chan struct{} // closed once subscribed, or when done
	done        chan struct{} // closed when the subscription has ended
	err         error         // why it ended, set before done is closed
	unsupported bool          // the server has no SSUBSCRIBE; set before done is closed

	line waitline.Line // this process's callers waiting for a release

	// woken counts the callers a release woke that have not acquired the
	// lock since: one that comes back to wait lost its turn to a caller
	// that did not wait in line, and gets back in at the front.
	woken atomic.Int32
}

// scriptTimeout bounds the scripts a subscription runs on its own (out of
// line when dropped, handing a wake on); they delay no caller.
const scriptTimeout = 2 * time.Second

// linger is how long a subscription outlives its last caller: the lockers
// leave between attempts and come back a moment later, and a subscription
// that stays keeps its place in the waiters' queue.
const linger = 100 * time.Millisecond

// join returns the subscription to releases of lockKey (a lock's key or
// a resource's permits key) through s's client, starting it if no caller
// uses it yet, with pass to hand wakes on (see waitFor); its ready channel says
// when the server has confirmed it. The caller must leave it.
func (h *subscriptions) join(ctx context.Context, s *Store, lockKey string, pass *Script) (*topic, error) {
	k := topicKey{s.subOwner, lockKey}
	for {
		h.mu.Lock()
		t := h.topics[k]
		if t != nil && t.closing {
			// Wait for it to end: a new subscription to the same channel
			// on the same connection would be ended by its unsubscription.
			h.mu.Unlock()
			select {
			case <-t.done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if t == nil {
			t = h.subscribe(s, k, pass)
			h.topics[k] = t
			h.n.Store(int32(len(h.topics)))
		}
		t.refs++
		h.mu.Unlock()
		return t, nil
	}
}

// leave releases a caller's use of t; the subscription is dropped linger
// after the last caller left, unless another joined meanwhile.
func (h *subscriptions) leave(t *topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.refs--
	if t.refs > 0 || t.closing {
		return
	}
	t.idle++
	idle := t.idle
	time.AfterFunc(linger, func() {
		h.mu.Lock()
		drop := t.refs == 0 && t.idle == idle && !t.closing
		if drop {
			t.closing = true
		}
		h.mu.Unlock()
		if drop {
			t.drop()
		}
	})
}

// subscribe starts the subscription of a new topic. Called with mu held.
func (h *subscriptions) subscribe(s *Store, k topicKey, pass *Script) *topic {
	ctx, cancel := context.WithCancel(context.Background())
	id := subscriptionID()
	t := &topic{
		store:   s,
		key:     k,
		id:      id,
		channel: ChannelOf(k.lock, id),
		pass:    pass,
		cancel:  cancel,
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	go h.receive(ctx, t)
	return t
}

// receive runs the subscription until it is dropped or breaks.
func (h *subscriptions) receive(ctx context.Context, t *topic) {
	err := t.store.client.Subscribe(ctx, t.channel, t.confirmed, func() {
		// Counted before the wake: the woken caller's acquisition claims
		// the lock the release reserved for this subscription (see take).
		t.woken.Add(1)
		if !t.line.WakeOne(t.handOn) {
			t.woken.Add(-1)
		}
	})
	if err != nil {
		t.unsupported = strings.Contains(err.Error(), "ERR unknown command")
		err = fmt.Errorf("%s: subscription to releases: %w", t.store.kind, err)
	}
	if ctx.Err() != nil {
		err = nil // dropped by its last caller
	}
	t.err = err
	h.mu.Lock()
	t.closing = true
	if h.topics[t.key] == t {
		delete(h.topics, t.key)
		h.n.Store(int32(len(h.topics)))
	}
	h.mu.Unlock()
	t.cancel()
	close(t.done)
	t.readyOnce.Do(func() { close(t.ready) })
}

// confirmed is called for every confirmation of the subscription.
func (t *topic) confirmed() {
	if t.subscribed.Swap(true) {
		// Subscribed again (the client re-sent SSUBSCRIBE, after a
		// reconnection say): a release may have happened in between, so
		// let the callers look again.
		t.line.WakeAll()
		return
	}
	t.readyOnce.Do(func() { close(t.ready) })
}

// drop ends a subscription its last caller left: out of line first, so
// that no release wakes a subscription that is gone (a wake that lands
// meanwhile is handed on: see Line.WakeOne), then unsubscribed.
func (t *topic) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	_ = t.store.eval(ctx, leaveScript, []string{WaitersOf(t.key.lock)}, t.id)
	cancel()
	t.cancel()
}

// handOn passes a wake this subscription cannot use to the next
// subscription in line, if the lock is still free or reserved for this
// one (see ReservationPrefix). It runs in a goroutine
// of its own: wakes arrive on the client's reader, which must not wait
// for a command.
func (t *topic) handOn() {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
		defer cancel()
		_ = t.store.eval(ctx, t.pass, []string{t.key.lock, WaitersOf(t.key.lock)}, ReservationPrefix+t.id, ReservationPrefix, t.store.reservationArg)
	}()
}

// subscriptionID returns a name for a subscription, unique across
// processes, for the waiters' queue.
func subscriptionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
