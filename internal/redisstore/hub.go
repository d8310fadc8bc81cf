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

// takeWoken reports whether a caller beginning to wait is one that a
// release woke and that comes back without having acquired the lock, and
// counts it as back. Where wakes carry a reservation, that is known only
// once the process has tried to claim it (see takeReserved): a caller
// that begins to wait before then is another caller of the process, and
// the woken one's coming acquisition claims the reservation.
func (t *topic) takeWoken() bool {
	if t.reserved.Load() > 0 {
		return false
	}
	return takeOne(&t.woken)
}

// takeReserved reports whether a release reserved the lock for this
// subscription, and the process has not tried to claim the reservation
// since, and counts it as tried.
func (t *topic) takeReserved() bool { return takeOne(&t.reserved) }

// takeOne decrements n if it is positive, and reports whether it did.
func takeOne(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// acquired tells the subscription to releases of the lock at key through
// s, if there is one, that s acquired the lock: a caller it woke has used
// its turn, and no reservation is left to claim.
func (h *subscriptions) acquired(s *Store, key string) {
	if t := h.lookup(s, key); t != nil {
		takeOne(&t.woken)
		takeOne(&t.reserved)
	}
}

// claim returns the id of the subscription to releases of the lock at
// key through s if a release reserved the lock for it and no acquisition
// of the process has tried to claim it since, counting this one as that
// try; and "" otherwise (always, at the cost of one load, when the
// process waits for no lock).
func (h *subscriptions) claim(s *Store, key string) string {
	if t := h.lookup(s, key); t != nil && t.takeReserved() {
		return t.id
	}
	return ""
}

// unclaim gives a claim back: one that claim counted for the
// reservation ReservationPrefix+id (reservation, the claim script's
// argument) of the subscription to releases of the lock at key through s,
// and that no answer says was used or refused (it was not sent, or its
// reply was lost). The next acquisition of the process then claims the
// reservation again, instead of sending SET NX, which its own
// reservation would refuse until it lapses. If the claim did take the
// lock, the next claim only acts as SET NX does.
func (h *subscriptions) unclaim(s *Store, key, reservation string) {
	id, ok := strings.CutPrefix(reservation, ReservationPrefix)
	if t := h.lookup(s, key); ok && t != nil && t.id == id {
		t.reserved.Add(1)
	}
}

// joinLive joins the process's subscription to releases of the lock at
// key through s if there is one, made and not ended — someone of the
// process waited for the lock lately — and returns nil otherwise. The
// caller must leave what it joined.
func (h *subscriptions) joinLive(s *Store, key string) *topic {
	if h.n.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[topicKey{s.subOwner, key}]
	if t == nil || t.closing || !t.subscribed.Load() {
		return nil
	}
	t.refs++
	return t
}

// lookup returns the subscription to releases of the lock at key through
// s, or nil.
func (h *subscriptions) lookup(s *Store, key string) *topic {
	if h.n.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.topics[topicKey{s.subOwner, key}]
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
	id      string      // names the subscription in the waiters' queue
	channel string      // the subscription's own shard channel: see ChannelOf
	pass    *Script     // hands a wake on: see waitFor
	refs    int         // callers using it; guarded by subscriptions.mu
	lingers *time.Timer // drops it once idle for linger; guarded by subscriptions.mu
	closing bool        // no longer to be joined; guarded by subscriptions.mu
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
	// reserved counts the reservations that releases made for this
	// subscription with their wakes (if reserving: see ReservationPrefix)
	// that no acquisition of the process has tried to claim: the next
	// acquisition claims one (see take), whichever caller makes it, and
	// gives it back if no answer tells what the claim did (see unclaim). A
	// wait does not count one off: a caller that begins to wait after a
	// wake is not necessarily the woken one (see takeWoken); nor does a
	// hand-on (see handOn).
	reserved atomic.Int32
	// reserving is whether this subscription's wakes carry a reservation:
	// it waits for a lock, and its store reserves.
	reserving bool

	grantMu sync.Mutex
	grants  map[string]*grantSlot // queued acquisitions in line, by token: see AcquireQueued
}

// scriptTimeout bounds the scripts a subscription runs on its own (out of
// line when dropped, handing a wake on); they delay no caller.
const scriptTimeout = 2 * time.Second

// linger is how long a subscription outlives its last caller: the lockers
// leave between attempts and come back a moment later, and a subscription
// that stays keeps its place in the waiters' queue.
const linger = 100 * time.Millisecond

// lingerFor, if set, replaces linger: see SetLinger.
var lingerFor atomic.Int64

// SetLinger makes the subscriptions the process drops from now on outlive
// their last caller by d instead of linger, until restore is called: for
// tests that need a subscription to stay between two calls however
// loaded the machine. The test must not run in parallel with others that
// wait.
func SetLinger(d time.Duration) (restore func()) {
	lingerFor.Store(int64(d))
	return func() { lingerFor.Store(0) }
}

// lingering returns how long a subscription outlives its last caller.
func lingering() time.Duration {
	if d := lingerFor.Load(); d > 0 {
		return time.Duration(d)
	}
	return linger
}

// join returns the subscription to releases of lockKey (a lock's key or
// a resource's permits key) through s's client, starting it if no caller
// uses it yet, for what (whose pass script hands wakes on); its ready
// channel says when the server has confirmed it. The caller must leave it.
func (h *subscriptions) join(ctx context.Context, s *Store, lockKey string, what *waitFor) (*topic, error) {
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
			t = h.subscribe(s, k, what)
			h.topics[k] = t
			h.n.Store(int32(len(h.topics)))
		}
		t.refs++
		h.mu.Unlock()
		return t, nil
	}
}

// leave releases a caller's use of t; the subscription is dropped linger
// after the last caller left, unless another joined meanwhile. One timer
// per subscription, set again at each leave: a caller that locks in a
// loop leaves and joins again thousands of times a second.
func (h *subscriptions) leave(t *topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.refs--
	if t.refs > 0 || t.closing {
		return
	}
	if t.lingers == nil {
		t.lingers = time.AfterFunc(lingering(), func() { h.dropIdle(t) })
	} else {
		t.lingers.Reset(lingering())
	}
}

// dropIdle drops t if no caller uses it.
func (h *subscriptions) dropIdle(t *topic) { h.close(t, true) }

// end ends the subscription t at once, whoever still uses it: it is not
// on the server where releases are published (see AcquireQueued). Its
// callers see it end, and the next caller to join makes a new one.
func (h *subscriptions) end(t *topic) { h.close(t, false) }

// close drops t unless it is closing already or, when idle, a caller
// still uses it.
func (h *subscriptions) close(t *topic, idle bool) {
	h.mu.Lock()
	drop := !t.closing && (!idle || t.refs == 0)
	if drop {
		t.closing = true
	}
	h.mu.Unlock()
	if drop {
		t.drop()
	}
}

// subscribe starts the subscription of a new topic. Called with mu held.
func (h *subscriptions) subscribe(s *Store, k topicKey, what *waitFor) *topic {
	ctx, cancel := context.WithCancel(context.Background())
	id := subscriptionID()
	t := &topic{
		store:   s,
		key:     k,
		id:      id,
		channel: ChannelOf(k.lock, id),
		pass:    what.pass,
		cancel:  cancel,
		ready:   make(chan struct{}),
		done:    make(chan struct{}),

		reserving: what.reserved && s.reserves(),
	}
	go h.receive(ctx, t)
	return t
}

// receive runs the subscription until it is dropped or breaks.
func (h *subscriptions) receive(ctx context.Context, t *topic) {
	err := t.store.client.Subscribe(ctx, t.channel, t.confirmed, func(payload string) {
		if payload != "" {
			t.granted(payload) // a queued acquisition's: see AcquireQueued
			return
		}
		// Counted before the wake: the woken caller's acquisition claims
		// the lock the release reserved for this subscription (see take).
		// A wake no caller takes is handed on by handOn.
		if t.reserving {
			t.reserved.Add(1)
		}
		t.woken.Add(1)
		t.line.WakeOne(t.handOn)
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
		t.lookAgain()
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

// handOn passes a wake this subscription cannot use (no caller waits, or
// the woken one left without using it) to the next subscription in line,
// if the lock is still free or reserved for this one (see
// ReservationPrefix), and so no longer counts the wake. It still counts
// the reservation: an acquisition of the process that comes before the
// script claims it (the script then finds the lock taken and wakes
// nobody), where SET NX would be refused by the process's own
// reservation; one that comes after sends the claim, which then acts as
// SET NX. The script runs in a goroutine of its own: wakes arrive on the
// client's reader, which must not wait for a command.
func (t *topic) handOn() {
	takeOne(&t.woken)
	go func() {
		waitAt(&handOnGate)
		ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
		defer cancel()
		_ = t.store.eval(ctx, t.pass, []string{t.key.lock, WaitersOf(t.key.lock), t.store.counterKey(t.key.lock)}, ReservationPrefix+t.id, ReservationPrefix, t.store.reservationArg)
	}()
}

// handOnGate, if set, holds every hand-on before it runs its script:
// see HoldHandOns.
var handOnGate atomic.Pointer[hold]

// hold is what HoldHandOns and HoldBatches set: gate is closed to let
// what it holds go on; reached is closed when the first reaches it.
type hold struct {
	gate, reached chan struct{}
	once          sync.Once
}

// newHold returns a hold stored in at, and the function that lets go of
// it: see HoldHandOns.
func newHold(at *atomic.Pointer[hold]) (reached <-chan struct{}, resume func()) {
	h := &hold{gate: make(chan struct{}), reached: make(chan struct{})}
	at.Store(h)
	var once sync.Once
	return h.reached, func() {
		once.Do(func() {
			at.Store(nil)
			close(h.gate)
		})
	}
}

// waitAt waits at the hold at, if there is one.
func waitAt(at *atomic.Pointer[hold]) {
	if h := at.Load(); h != nil {
		h.once.Do(func() { close(h.reached) })
		<-h.gate
	}
}

// HoldHandOns makes the process's subscriptions hold the wakes they hand
// on (see handOn) until resume is called, for tests that act before a
// wake is handed on; reached is closed once a subscription holds one (it
// has counted the reservation the wake carries). The test must not run
// in parallel with others that wait.
func HoldHandOns() (reached <-chan struct{}, resume func()) { return newHold(&handOnGate) }

// subscriptionID returns a name for a subscription, unique across
// processes, for the waiters' queue.
func subscriptionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
